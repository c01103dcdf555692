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


def measured_alike(run) -> tuple:
    """What two runs must share for their numbers to be compared: models, data, resolution, evaluation
    examples and split (issue #109: a surface was explained against a coarser one started elsewhere)."""
    s = run.settings
    return (tuple(run.all_models), s.get("data"), s.get("resolution"), s.get("max_examples"), s.get("split", "eval"))


def simplex_sentence(runs: list) -> str:
    """Why a matcher's surface can stand above no alignment's, said where it does (issue #56: weight
    matching's 4.19 above none's 3.95 on one triple had no word), naming the run it compares against: the
    newest "none" surface measured alike (the same models, data, resolution and examples)."""
    vanillas = sorted((r for r in runs if r.method == "none"), key=lambda r: r.created, reverse=True)
    above = []
    for run in runs:
        base = next((v for v in vanillas if measured_alike(v) == measured_alike(run)), None)
        if run.method != "none" and base is not None and run.metrics["max_barrier"] > base.metrics["max_barrier"]:
            above.append((run, base))
    if not above:
        return ""
    named = ", ".join(f"{run.method} matching ({run.metrics['max_barrier']:.2f}, run {run.id[-6:]})"
                      for run, _ in above)
    bases = ", ".join(dict.fromkeys(f"{base.metrics['max_barrier']:.2f}, run {base.id[-6:]}" for _, base in above))
    return (f"Here {named} rises above no alignment ({bases}: the same three models, data and resolution). A "
            "matcher that does not look at "
            "the loss can do that: weight matching brings the weights close, not the functions, and on vit-digits "
            "its data-free residual map is the part data does not favour (docs/matching.md, \"the residual map "
            "decides\"); learned matching optimises the loss along the paths itself.")


def demo_conclusion(barriers: dict[str, float], recipe: str) -> str:
    """What students should take from the demo's part 2, drawn from its own three barriers ("no alignment",
    "weight matching", "learned matching"): how much of the barrier each matcher removed, and why weight
    matching helps on one pair and not on another."""
    vanilla, weight, learned = (barriers[k] for k in ("no alignment", "weight matching", "learned matching"))

    def share(after: float) -> str:
        return f"{100 * (vanilla - after) / vanilla:.0f}%" if vanilla > 0 else "none"

    if weight <= 0.5 * vanilla:
        said_weight = (f"Weight matching, which looks only at the weights, removed {share(weight)} of it: most of "
                       "the barrier was a symmetry, the same function written with its units in another order.")
    elif weight < vanilla:
        said_weight = (f"Weight matching, which looks only at the weights, removed {share(weight)} of it: part of "
                       "the barrier was a symmetry, but the closest weights are not always the closest functions.")
    else:
        said_weight = ("Weight matching, which looks only at the weights, did not lower it here: on this pair the "
                       "weights it brought close do not compute alike (units that learned different features have "
                       "no good partner), so matching weights is not matching functions.")
    if learned <= 0.05:
        said_learned = (f"Learned matching, which optimises the loss along the path, brought it to {learned:.3f}: "
                        "once the symmetry is chosen by the loss, the two seeds sit in one basin.")
    elif learned < min(vanilla, weight):
        said_learned = (f"Learned matching, which optimises the loss along the path, brought it lower still "
                        f"({learned:.3f}) but not to zero: what is left is not a symmetry of these classes.")
    else:
        said_learned = (f"Learned matching ({learned:.3f}) did no better here: try more steps, or more symmetry "
                        "classes.")
    return (f"**What this shows.** Without alignment, the straight path between two {recipe} seeds rises "
            f"{vanilla:.3f} above the line between their losses. {said_weight} {said_learned} "
            "Weight matching helps where two seeds learned the same features in another order, and not where "
            "they learned different ones: try another recipe, or other seeds on Align, to see both.")
