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
