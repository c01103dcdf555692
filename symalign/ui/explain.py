"""Plain-language sentences the app shows next to its figures (for a seminar audience)."""

from __future__ import annotations

KIND_NAMES = {"residual": "the residual stream", "qk": "the query/key spaces inside heads",
              "vo": "the value/output spaces inside heads"}


def spectrum_sentence(result: dict) -> str:
    """What an eigen-angle spectrum says, in two sentences built from its numbers."""
    summary = result["summary"]
    share = sum(s["share_below_0.1"] * s["count"] for s in summary.values()) / sum(s["count"] for s in summary.values())
    biggest = max(summary, key=lambda k: summary[k]["median"])
    text = (f"Each bar counts eigenvalues e^(±iθ) of a correction C = O_learned·O_startᵀ: θ = 0 means learning "
            f"left that plane exactly where weight matching put it. Here **{100 * share:.0f}%** of the angles are "
            f"below 0.1 rad; the largest corrections are in **{KIND_NAMES.get(biggest, biggest)}** "
            f"(median {summary[biggest]['median']:.2f} rad).")
    stability = result.get("permutation_stability") or {}
    if stability:
        kept = sum(stability.values()) / len(stability)
        size = "small" if share >= 0.5 else "moderate"
        text += (f" Learning left **{100 * kept:.0f}%** of the permutation entries (MLP units, heads) in place: what "
                 f"it adds to weight matching is {size} rotations, largest in {KIND_NAMES.get(biggest, biggest)}"
                 + (", rather than re-matched units." if kept > 0.8 else ", and re-matched units."))
    return text


def simplex_sentence(surfaces: list[tuple[str, dict]]) -> str:
    """Why a matcher's surface can stand above no alignment's, said where it does (issue #56: weight
    matching's 4.19 above none's 3.95 on one triple had no word). `surfaces`: (method, metrics) of
    runs over the same three models."""
    vanilla = next((m for method, m in surfaces if method == "none"), None)
    if vanilla is None:
        return ""
    above = [(method, m["max_barrier"]) for method, m in surfaces if method != "none"
             and m["max_barrier"] > vanilla["max_barrier"]]
    if not above:
        return ""
    named = ", ".join(f"{method} matching ({value:.2f})" for method, value in above)
    return (f"Here {named} rises above no alignment ({vanilla['max_barrier']:.2f}). A matcher that does not look at "
            "the loss can do that: weight matching brings the weights close, not the functions, and on vit-digits "
            "its data-free residual map is the part data does not favour (docs/matching.md, \"the residual map "
            "decides\"); learned matching optimises the loss along the paths itself.")
