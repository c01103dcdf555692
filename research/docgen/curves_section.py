"""docs/results.md's "Beyond the straight line" section (results_report.py --curves FAMILY[=DIR] ...).

Per family: the `curves` preset's table (the straight line, the aligned straight line, the fitted
Bézier curve and the aligned curve, mean ± std over the seed pairs, each pair's numbers beside),
Garipov et al.'s claim decided from the numbers, and the plane through A, B and aligned B of the
first pair with the paths drawn on it (docs/results/FAMILY-plane.html)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from research.docgen import records
from symalign.sweeps.curves import curves_cells, curves_summary, curves_text

HEADING = "## Beyond the straight line: curves"
CURVE_SHARE = 0.10  # Garipov et al.'s bar here: the unaligned curve's barrier at most 10% of the straight line's


def plane_figure_file(family: str, cells: pd.DataFrame, folder: Path, resolution: int = 21) -> str | None:
    """The plane through A, B and aligned B of the first pair (its curve runs' folders), written as HTML."""
    from symalign.plots.plane import plane_figure
    from symalign.runs import RunStore
    from symalign.workflows.curves import plane_run

    store = RunStore()
    try:
        plain_id, aligned_id = str(cells["runs"].iloc[0]).split()
        plain, aligned = store.get(plain_id).metrics["out"], store.get(aligned_id).metrics["out"]
    except Exception:  # the runs are not in this machine's history: no figure, said in the text
        return None
    plane = plane_run([f"{plain}/a", f"{plain}/b", f"{aligned}/b"], resolution=resolution, curve=[plain, aligned],
                      labels=("A", "B", "aligned B"))
    name = f"{family}-plane.html"
    title = f"{family} {cells['a'].iloc[0]} ↔ {cells['b'].iloc[0]}: the plane through A, B and aligned B"
    plane_figure(plane.to_json(), title).write_html(folder / name, include_plotlyjs="cdn")
    return name


def curves_section(families: list[str], folder: Path) -> list[str]:
    """The section: for each FAMILY (or FAMILY=DIR, reading `sweep --preset curves --out DIR`'s cells)."""
    lines = [HEADING, "",
             "`symalign sweep --preset curves --family RECIPE` (docs/paths.md): on each seed pair, the straight "
             "line, the straight line after weight matching (all classes), a Bézier curve fitted between the models "
             "as given and one fitted after alignment (400 Adam steps, a fresh t per batch). Loss barriers, mean ± "
             "std over the pairs; the last column is the share of the straight line's barrier left.", ""]
    for entry in families:
        family, _, directory = entry.partition("=")
        cells = records.current().frame(f"curves-{family}", lambda family=family, directory=directory: pd.read_csv(
            Path(directory) / "curves-cells.csv") if directory else curves_cells(family))
        figure = records.current().data(f"plane-{family}", lambda family=family, cells=cells: plane_figure_file(
            family, cells, folder))
        lines += [f"### {family}", "", curves_text(curves_summary(cells), cells, markdown=True), "",
                  curve_claim(family, cells), ""]
        lines += [f"The plane through A, B and aligned B of the first pair, with the paths on it: "
                  f"[results/{figure}](results/{figure}).", ""] if figure else []
    return lines


def curve_claim(family: str, cells: pd.DataFrame) -> str:
    """Garipov et al.'s finding (a curve of nearly constant loss joins two independently trained
    networks), decided on every pair; exceptions named, not averaged away."""
    share = cells["barrier"] / cells["line_barrier"]
    over = [f"{a} ↔ {b} ({s:.0%})" for a, b, s in zip(cells["a"], cells["b"], share) if s > CURVE_SHARE]
    aligned_left = (cells["aligned_line_barrier"] / cells["line_barrier"]).mean()
    setting = ("Not comparable in magnitude: Garipov et al. fit polygonal chains and Bézier curves between "
               "convolutional networks (VGG, ResNet-type) on CIFAR-10 and CIFAR-100, trained for many epochs; here "
               f"one Bézier bend is fitted in minutes on {family}.")
    if not over:
        verdict = (f"**Agrees** with Garipov et al.: on every pair the fitted curve keeps at most "
                   f"{share.max():.0%} of the straight line's barrier (≤ {CURVE_SHARE:.0%}), with no symmetry used, "
                   f"while weight matching (all classes) leaves {aligned_left:.0%} of it on the straight line.")
    else:
        verdict = (f"**Agrees in part** with Garipov et al.: the curve keeps more than {CURVE_SHARE:.0%} of the "
                   f"straight line's barrier on {', '.join(over)}.")
    return verdict + " " + setting
