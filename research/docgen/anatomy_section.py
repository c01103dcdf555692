"""The report's "Where the barrier lives" section (issue #44): the four views of `symalign attribute`,
`symalign correlations`, `symalign attribute --swap` and `--method soft --no-round` on the zoo, each
with its numbers and two sentences for a student. Used by results_report.py (`--anatomy`)."""

from __future__ import annotations

from research.docgen import records
from symalign.data import load_data
from symalign.landscape.attribution import attribute
from symalign.landscape.swaps import swap_barriers
from symalign.match.activation.correlations import feature_correlations
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model

HEADING = "## Where the barrier lives"


def _pair(recipe: str):
    return canonicalize(load_model(f"zoo:{recipe}/0")), canonicalize(load_model(f"zoo:{recipe}/1"))


ANATOMY_POINTS = 7  # points on each path of the attribution and the swaps


def anatomy_numbers(steps: int | None, max_examples: int, points: int) -> dict:
    """The four views' numbers (what the section says), computed on the zoo."""
    a, b = _pair("gpt-shakespeare")
    text = load_data("shakespeare")
    weight = align(a, b, AlignConfig(method="weight", preset="all"))
    whole, groups = attribute(a, canonicalize(weight.aligned), text, points=points, max_examples=max_examples)
    top = sorted(groups, key=lambda g: -g.mean)[:3]
    activation = align(a, b, AlignConfig(method="activation", preset="all", data="shakespeare"))
    report = feature_correlations(a, b, activation.aligned, text, max_examples=128)
    learned = align(a, b, AlignConfig(method="learned", preset="all", data="shakespeare", steps=steps))
    w, lb, swaps = swap_barriers(a, b, learned.start, learned.transform, text, points=points,
                                  max_examples=max_examples)
    best = sorted(swaps, key=lambda s: -s.closed)[:3]
    va, vb = _pair("vit-digits")
    soft = align(va, vb, AlignConfig.from_options({"round": False, "steps": steps or 40}, method="soft",
                                                  preset="all", data="digits"))
    unrounded = (soft.report.learned_summary.unrounded if soft.report.learned_summary else None) or {}
    return {"whole": float(whole), "top": [(g.group, float(g.mean)) for g in top],
            "layers": [(r.layer, r.kind, float(r.before), float(r.after)) for r in report.layers],
            "heads": [(h.layer, float(h.within_after), float(h.across_after)) for h in report.heads],
            "weight": float(w), "learned": float(lb),
            "swaps": [(s.group, float(s.barrier), float(s.closed)) for s in best],
            "unrounded": {k: float(v) for k, v in unrounded.items()}}


def anatomy_section(steps: int | None = None, max_examples: int = 64, points: int | None = None) -> list[str]:
    """The section's lines, from the report's records (computed when not recorded); `steps` shortens the
    learned and soft runs and `points` the paths (a quick check: the report's `--points`; None: ANATOMY_POINTS)."""
    points = points or ANATOMY_POINTS
    n = records.current().data("anatomy", lambda: anatomy_numbers(steps, max_examples, points))
    lines = [HEADING, "", "After alignment a barrier often remains; these views say where (`symalign attribute`, "
             "`symalign correlations`, `symalign attribute --swap`, `--method soft --no-round`; the app's page "
             "of the same name). gpt-shakespeare 0 ↔ 1 unless said.", "",
             "**By parameter group.** Move one group of parameters halfway with the rest at A (or at B): the group "
             "whose move alone raises the loss most holds the barrier. After weight matching (barrier "
             f"{n['whole']:.3f} on {max_examples} windows, {points} points): "
             + ", ".join(f"{group} +{mean:.2f}" for group, mean in n["top"]) + ".", ""]
    rows = ", ".join(f"block {layer} {kind} {before:.2f} → {after:.2f}" for layer, kind, before, after in n["layers"])
    heads = ", ".join(f"block {layer} {within:.2f} vs {across:.2f}" for layer, within, across in n["heads"])
    lines += ["**Feature correlations.** Unit i of A against unit i of B on data, before and after activation "
              "matching: before, they have nothing to do with each other (≈ 0); after, they rise as far as the two "
              f"trainings learned the same features. Mean matched correlation: {rows}. Head outputs after matching, "
              f"mean |corr| inside the head blocks vs across them: {heads}.", ""]
    lines += ["**Learned vs weight matching.** Start from weight matching's transform and switch one group to what "
              "learned matching found: the group whose switch alone closes most of the gap carries learning's "
              f"correction. Weight {n['weight']:.3f}, learned {n['learned']:.3f}; alone: "
              + ", ".join(f"{group} {barrier:.3f} ({100 * closed:.0f}% of the gain)"
                          for group, barrier, closed in n["swaps"]) + ".", ""]
    u = n["unrounded"]
    if u:
        lines += ["**The soft path unrounded** (vit-digits 0 ↔ 1, Theus et al. App. C.2). Keep soft matching's "
                  "doubly-stochastic maps to the end: the path's midpoint is lower, but its end is no longer B. "
                  f"Midpoint loss {u['midpoint_loss']:.3f} unrounded against {u['rounded_midpoint_loss']:.3f} "
                  f"rounded; the soft end's loss {u['endpoint_loss']:.4f} against B's {u['b_loss']:.5f}, its "
                  f"weights {100 * u['endpoint_distance']:.0f}% of B's norm away ({steps or 40} steps, on the check "
                  "batch).", ""]
    return lines
