"""Zhang et al.'s Figs. 4 and 5 on the zoo (`symalign sweep --preset zhang-fig4 | zhang-fig5`).

Fig. 4 is the whole-model distance ‖A − T(B)‖ / ‖A‖ after their matching (with and without rescaling),
after Git Re-Basin's permutations (with and without rescaling added), and after OT fusion of the FFN
only. Fig. 5 draws the loss along the straight path A → T(B) for their matching without the FFN part,
without the attention part, and in full (and the unmatched path for reference). Fig. 3's merged
accuracies are `--preset zhang-fig3` (symalign.sweeps.zhang).

OT fusion here is OT-WTS with exact plans (equal widths give permutations, so B keeps its function;
Sinkhorn's blurred B would be a different model and its "distance" a different question)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from symalign.papers.table import verdict
from symalign.papers.zhang import FIG4, FIG5
from symalign.sweeps.peers import peer_pairs
from symalign.sweeps.zhang import MATCHING, ROTATIONS

PERMUTATIONS = {"mlp": "perm", "heads": "perm", "qk": "none", "vo": "none", "residual": "none"}
# Fig. 4's rows: (label, weight matching's classes, or "ot-ffn" for OT fusion of the FFN only, or None: no matching)
FIG4_ROWS: tuple[tuple[str, dict | str | None], ...] = (
    ("no matching", None),
    ("Git Re-Basin (permutations)", PERMUTATIONS),
    ("Git Re-Basin + rescaling", {**PERMUTATIONS, "qk": "rescale", "vo": "rescale"}),
    ("OT-Fusion, FFN only (OT-WTS, exact)", "ot-ffn"),
    ("their matching w/o rescaling", ROTATIONS),
    ("their matching", MATCHING),
)
# Fig. 5's curves: (label, classes or None).
FIG5_ROWS: tuple[tuple[str, dict | None], ...] = (
    ("w/o matching", None),
    ("w/o FFN", {**MATCHING, "mlp": "none"}),
    ("w/o ATTN", {**MATCHING, "qk": "none", "vo": "none"}),
    ("matching", MATCHING),
)
Progress = Callable[[int, int, dict], None]


def _aligned_b(a, b, how: dict | str | None, device: str = "cpu"):
    """B in A's basis by one of the figures' rows (canonical forms)."""
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.merge.ot_fusion import OTSettings, fuse_members
    from symalign.models import canonicalize

    if how is None:
        return canonicalize(b)
    if how == "ot-ffn":
        return fuse_members([a, b], "ot-wts", settings=OTSettings("emd"), kinds=("mlp",))[1]
    return align(a, b, AlignConfig(method="weight", classes=how, device=device)).aligned


def fig4_cells(family: str, seeds: list[int] | None = None, device: str = "cpu",
               progress: Progress | None = None) -> pd.DataFrame:
    """One row per (row, pair): the relative distance ‖A − T(B)‖ / ‖A‖ over every tensor."""
    from symalign.match.weight.descent import distance
    from symalign.models import canonicalize, load_model

    pairs = peer_pairs(family, seeds)
    rows, total = [], len(pairs) * len(FIG4_ROWS)
    for a_ref, b_ref in pairs:
        a, b = load_model(a_ref), load_model(b_ref)
        canon_a = canonicalize(a).tensors
        for label, how in FIG4_ROWS:
            rows.append({"row": label, "a": a_ref, "b": b_ref,
                         "distance": distance(canon_a, _aligned_b(a, b, how, device).tensors)})
            if progress:
                progress(len(rows), total, rows[-1])
    return pd.DataFrame(rows)


def fig4_summary(cells: pd.DataFrame) -> pd.DataFrame:
    grouped = cells.groupby("row", sort=False)["distance"]
    return pd.DataFrame({"row": list(grouped.groups), "pairs": grouped.size().values,
                         "distance_mean": grouped.mean().values,
                         "distance_std": grouped.std(ddof=1).fillna(0.0).values})


def fig4_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """The distances, then Zhang et al.'s reading (their matching brings the models closest) from the numbers."""
    lines = ["| row | ‖A − T(B)‖ / ‖A‖ |", "|---|---|"] if markdown else [f"{'row':<40}{'distance':>20}"]
    for _, r in summary.iterrows():
        value = f"{r['distance_mean']:.4f} ± {r['distance_std']:.4f}"
        lines.append(f"| {r['row']} | {value} |" if markdown else f"{r['row']:<40}{value:>20}")
    by = cells.pivot_table(index=["a", "b"], columns="row", values="distance")

    def per_pair(margin) -> dict[str, float]:
        return {f"{a.split(':')[-1]} ↔ {b.split(':')[-1]}": float(d) for (a, b), d in margin.items()}

    others = [r for r, _ in FIG4_ROWS if r != "their matching"]
    lines += ["", "Their matching gives the smallest distance of every row: closest other row − their matching, "
                  f"per pair: {verdict(per_pair(by[others].min(axis=1) - by['their matching']), digits=4)}."]
    permutation_rows = [r for r in ("Git Re-Basin (permutations)", "OT-Fusion, FFN only (OT-WTS, exact)") if r in by]
    if permutation_rows and "their matching w/o rescaling" in by:
        margin = by[permutation_rows].min(axis=1) - by["their matching w/o rescaling"]
        lines.append(f"\"{FIG4.claims[0].quote}\": closest of Git Re-Basin's and OT fusion's rows − their matching "
                     f"w/o rescaling, per pair: {verdict(per_pair(margin), digits=4)}.")
    if {"their matching", "their matching w/o rescaling"} <= set(by):
        margin = by["their matching w/o rescaling"] - by["their matching"]
        lines.append(f"\"{FIG4.claims[1].quote}\": w/o rescaling − with it, per pair: "
                     f"{verdict(per_pair(margin), digits=4)}.")
    return "\n".join(lines)


def row_curves(family: str, rows: tuple[tuple[str, object], ...], aligned: Callable, seeds: list[int] | None = None,
               points: int = 21, max_examples: int | None = None, device: str = "cpu",
               progress: Progress | None = None) -> dict[str, list[dict]]:
    """The papers' path figures (this one, TransFusion Fig. 5): per row (label, how), the loss and accuracy
    along canonical A → `aligned(a, b, how, device)` on each pair's evaluation split, with the pair's references."""
    from symalign.data import load_data
    from symalign.landscape.interpolation import interpolation_curve
    from symalign.models import canonicalize, load_model
    from symalign.models.io import default_data_spec

    pairs = peer_pairs(family, seeds)
    out: dict[str, list[dict]] = {label: [] for label, _ in rows}
    done, total = 0, len(pairs) * len(rows)
    for a_ref, b_ref in pairs:
        a, b = load_model(a_ref), load_model(b_ref)
        data = load_data(default_data_spec(a))
        for label, how in rows:
            c = interpolation_curve(canonicalize(a), aligned(a, b, how, device), data, points, max_examples, device)
            out[label].append({"lambdas": c.lambdas, "loss": c.loss, "accuracy": c.accuracy, "barrier": c.barrier,
                               "a": a_ref, "b": b_ref})
            done += 1
            if progress:
                progress(done, total, {"row": label, "a": a_ref, "b": b_ref, "barrier": c.barrier})
    return out


def fig5_curves(family: str, seeds: list[int] | None = None, points: int = 21, max_examples: int | None = None,
                device: str = "cpu", progress: Progress | None = None) -> dict[str, list[dict]]:
    """Per Fig. 5 row, the loss and accuracy along A → T(B) on each pair's evaluation split."""
    return row_curves(family, FIG5_ROWS, _aligned_b, seeds, points, max_examples, device, progress)


def fig5_cells(curves: dict[str, list[dict]]) -> pd.DataFrame:
    """One row per (row, pair, λ): the table behind the figure."""
    return pd.DataFrame([{"row": label, "a": c["a"], "b": c["b"], "lambda": lam, "loss": loss, "barrier": c["barrier"]}
                         for label, runs in curves.items() for c in runs
                         for lam, loss in zip(c["lambdas"], c["loss"])])


LOSS_RANGE = ("the paper's loss barrier is \"the range of loss value along the interpolation path\" (max − min); "
              "symalign's is the largest rise above the straight line between the endpoints: both are given, and "
              "the verdict is on each")


def loss_range(curve: dict) -> float:
    """Zhang et al.'s loss barrier: the range of the loss along the path (their Fig. 5, §5.4)."""
    return max(curve["loss"]) - min(curve["loss"])


def fig5_text(curves: dict[str, list[dict]]) -> str:
    """Each curve's barrier by both definitions (mean ± std over the pairs), and whether full matching is the
    lowest, per pair by the one verdict rule."""
    import statistics

    def spread(values: list[float]) -> str:
        return f"{statistics.fmean(values):.3f} ± {statistics.stdev(values) if len(values) > 1 else 0:.3f}"

    lines = [f"Two measures: {LOSS_RANGE}."]
    for label, runs in curves.items():
        lines.append(f"{label}: range of loss {spread([loss_range(c) for c in runs])}; barrier above the straight "
                     f"line {spread([c['barrier'] for c in runs])}")
    for name, measure in (("range of loss (the paper's)", loss_range), ("barrier above the straight line",
                                                                        lambda c: c["barrier"])):
        full = {(c["a"], c["b"]): measure(c) for c in curves["matching"]}
        lowest_other: dict[tuple[str, str], float] = {}
        for label, runs in curves.items():
            for c in runs:
                if label != "matching":
                    pair = (c["a"], c["b"])
                    lowest_other[pair] = min(lowest_other.get(pair, float("inf")), measure(c))
        margins = {f"{a.split(':')[-1]} ↔ {b.split(':')[-1]}": other - full[(a, b)]
                   for (a, b), other in lowest_other.items()}
        lines.append(f"\"{FIG5.claims[0].quote}\", by the {name}: lowest other curve − "
                     "full matching, per pair: " + verdict(margins, digits=3))
    return "\n".join(lines)


def fig5_figure(curves: dict[str, list[dict]], family: str):
    """The figure: loss and accuracy along the path, mean ± std over the pairs, one band per row."""
    from symalign.plots.interpolation import bands_figure

    return bands_figure([(label, None, runs) for label, runs in curves.items()],
                        title=f"Zhang et al. Fig. 5 on {family}: the path A → T(B) by which parts are matched")
