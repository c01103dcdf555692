"""Beyond the straight line on a zoo family (`symalign sweep --preset curves --family RECIPE`): on each
seed pair, the barrier of the straight line, the aligned straight line, the fitted curve and the
curve after alignment, then mean ± std over the pairs.

The question it answers (Garipov et al. 2018 vs. linear mode connectivity): does a curve without any
symmetry do what alignment does for the straight line? Each pair's two fits are recorded `curve`
runs, reused when asked again."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from symalign.landscape.curve_options import CurveOptions
from symalign.match.config import AlignConfig
from symalign.runs.store import RunStore
from symalign.sweeps.peers import peer_pairs

PATHS = (("straight line", "line_barrier", "line_accuracy_barrier"),
         ("aligned straight line", "aligned_line_barrier", "aligned_line_accuracy_barrier"),
         ("curve", "barrier", "accuracy_barrier"),
         ("aligned curve", "aligned_curve_barrier", "aligned_curve_accuracy_barrier"))
CURVES_HELP = ("the straight line, the aligned straight line (weight matching, all classes), a fitted Bézier curve "
               "and the aligned curve on each seed pair (Garipov et al.)")
Progress = Callable[[int, int, dict], None]


def curves_cells(family: str, seeds: list[int] | None = None, method: str = "weight",
                 options: CurveOptions | None = None, max_examples: int | None = None, device: str = "auto",
                 store: RunStore | None = None, progress: Progress | None = None) -> pd.DataFrame:
    """One row per seed pair: the four paths' loss and accuracy barriers and the two fits' seconds."""
    from symalign.workflows.curves import curve_pair_runs

    store = store if store is not None else RunStore()
    pairs = peer_pairs(family, seeds)
    rows = []
    for a, b in pairs:
        config = AlignConfig(method=method, preset="all")
        plain_id, aligned_id = curve_pair_runs(a, b, config, options, max_examples=max_examples, device=device,
                                               store=store, source="cli")
        plain, aligned = store.get(plain_id).metrics, store.get(aligned_id).metrics
        rows.append({"a": a, "b": b,
                     "line_barrier": plain["line_barrier"], "line_accuracy_barrier": plain["line_accuracy_barrier"],
                     "aligned_line_barrier": aligned["aligned_line_barrier"],
                     "aligned_line_accuracy_barrier": aligned["aligned_line_accuracy_barrier"],
                     "barrier": plain["barrier"], "accuracy_barrier": plain["accuracy_barrier"],
                     "aligned_curve_barrier": aligned["barrier"],
                     "aligned_curve_accuracy_barrier": aligned["accuracy_barrier"],
                     "fit_seconds": plain["fit_seconds"], "aligned_fit_seconds": aligned["fit_seconds"],
                     "runs": f"{plain_id} {aligned_id}"})
        if progress:
            progress(len(rows), len(pairs), rows[-1])
    return pd.DataFrame(rows)


def curves_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per path: loss and accuracy barrier, mean and std over the pairs, and the share of the straight
    line's loss barrier that is left (the issue's "curve ≤ 10% of the line")."""
    rows = []
    for name, loss, acc in PATHS:
        rows.append({"path": name, "pairs": len(cells), "barrier_mean": cells[loss].mean(),
                     "barrier_std": cells[loss].std(ddof=1) if len(cells) > 1 else 0.0,
                     "accuracy_mean": cells[acc].mean(),
                     "accuracy_std": cells[acc].std(ddof=1) if len(cells) > 1 else 0.0,
                     "share_of_line": (cells[loss] / cells["line_barrier"]).mean()})
    return pd.DataFrame(rows)


def curves_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """The table a person reads, then each pair's numbers (exceptions are not averaged away)."""
    head = ["| path | loss barrier | accuracy barrier (pp) | share of the line's |", "|---|---|---|---|"]
    lines = head if markdown else [f"{'path':<24} {'loss barrier':>16} {'accuracy barrier':>18} {'of the line':>12}"]
    for _, r in summary.iterrows():
        cells_text = (r["path"], f"{r['barrier_mean']:.3f} ± {r['barrier_std']:.3f}",
                      f"{r['accuracy_mean']:.1f} ± {r['accuracy_std']:.1f}", f"{r['share_of_line']:.0%}")
        lines.append("| " + " | ".join(cells_text) + " |" if markdown else
                     f"{cells_text[0]:<24} {cells_text[1]:>16} {cells_text[2]:>18} {cells_text[3]:>12}")
    lines.append("")
    for _, c in cells.iterrows():
        pair = f"{c['a']} ↔ {c['b']}"
        lines.append(("- " if markdown else "  ") + f"{pair}: line {c['line_barrier']:.3f}, aligned line "
                     f"{c['aligned_line_barrier']:.3f}, curve {c['barrier']:.3f}, aligned curve "
                     f"{c['aligned_curve_barrier']:.3f} (fits {c['fit_seconds']:.0f} s and "
                     f"{c['aligned_fit_seconds']:.0f} s)")
    return "\n".join(lines)
