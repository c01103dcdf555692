"""docs/results.md's ablation sections (results_report.py --ablations PRESET ...): one preset's table and
chart, what its rows show decided from the numbers, and where a paper states a finding, that finding with
the zoo's verdict (or "not comparable" and why); Theus et al.'s Figs. 5 and 6 drawn from the recorded runs."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from research.docgen import records
from symalign.papers.table import verdict as verdict_of
from symalign.runs import RunStore
from symalign.sweeps.paper_tables import per_pair

# A paper's finding for an ablation preset, where one is stated: (who, what they found, the row they found best[,
# how this preset's setting differs: then the verdict is "not comparable", with what the zoo shows)].
PAPER_FINDINGS = {
    "residual-strategies": ("Verma & Elbayad (Table 2, MultiBERTs, masked LM)", "no residual permutation (identity) "
                            "is best", "activation (all), residual identity",
                            "their table permutes only the residual of post-LN BERTs; this one matches every class "
                            "with an orthogonal residual on a pre-LN model (their setting: the Verma section)"),
    "head-strategies": ("Verma & Elbayad (Table 1, MultiBERTs, masked LM)", "pairing heads (Head-Perm, two-stage) "
                        "beats keeping them in order (Monotonic)", "activation (all), heads two-stage",
                        "their table matches feed-forward and attention with the residual left as it is; this one "
                        "also matches the residual (their setting: the Verma section)"),
    "lambda-sampling": ("Theus et al. (Fig. 5)", "\"both uniform and Gaussian sampling result in relatively "
                        "high loss barriers\", while narrow uniform sampling U(0.4, 0.6), which they adopt, and fixed "
                        "interpolation give a lower loss near the midpoint", "learned (all), λ uniform_mid",
                        "their ViTs are 6 layers, width 256, on CIFAR-10; the zoo's vit-digits is 4 layers, width 64, "
                        "on 8×8 digits, where every sampler may close the barrier"),
    "learned-start": ("Theus et al.", "learning starts from weight matching's transform (this matters)",
                      "learned (all) from weight"),
}


RESOLUTION = 0.01  # barriers closer than this (nats) are not told apart in a verdict


def fmt(row) -> str:
    return f"{row['mean']:.2f} ± {row['std']:.2f}"


def sem(row) -> str:
    """The standard error of the mean over the seed pairs, with n (Verma & Elbayad report mean ± SE)."""
    return f"± {row['sem']:.2f} ({row['n']})"



def finding(preset: str, summary: list[dict], cells=None) -> str:
    """What the rows show, decided from the numbers: the lowest and highest rows, whether they differ
    by more than the spread between seed pairs, and the paper's finding where one is stated, decided per seed
    pair by the one verdict rule (symalign.papers.table) from the preset's `cells`."""
    rows = [r for r in summary if r["mean"] == r["mean"]]  # measured rows (not nan)
    if len(rows) < 2:
        return ""
    best, worst = min(rows, key=lambda r: r["mean"]), max(rows, key=lambda r: r["mean"])
    spread = max(best["std"], worst["std"], RESOLUTION)  # two barriers of 0.00 do not separate
    clear = worst["mean"] - best["mean"] > spread
    if worst["mean"] < RESOLUTION:
        closed = (f"Every row closes the barrier (all below {RESOLUTION}): the zoo cannot separate them, so it "
                  "neither agrees nor disagrees with a paper's preference.")
        return (f"{closed} (Lowest {best['row']}, {best['mean']:.4f}; highest {worst['row']}, {worst['mean']:.4f}.)"
                + (f" {PAPER_FINDINGS[preset][0]}: {PAPER_FINDINGS[preset][1]}." if preset in PAPER_FINDINGS else ""))
    out = (f"Lowest: {best['row']} ({best['mean']:.2f}); highest: {worst['row']} ({worst['mean']:.2f}); the gap "
           f"{worst['mean'] - best['mean']:.2f} is {'larger' if clear else 'no larger'} than the spread between seed "
           f"pairs ({spread:.2f}){'' if clear else ', so the rows do not separate at this scale'}.")
    if preset in PAPER_FINDINGS:
        who, what, row, *differs = PAPER_FINDINGS[preset]
        mine = next((r for r in rows if r["row"] == row), None)
        if mine is not None and differs:
            out += (f" {who}: {what}. Different setting: {differs[0]}; not comparable. (Here {row} is "
                    f"{'the lowest' if mine is best else 'not the lowest'}, at {mine['mean']:.2f}.)")
        elif mine is not None:
            margins = lowest_margins(cells, row) if cells is not None else {}
            verdict = (f"Per seed pair, the lowest other row − {row}: {verdict_of(margins, digits=3)}." if margins
                       else "Not decided (no per-pair cells).")
            out += f" {who}: {what}. {verdict}"
    return out


def lowest_margins(cells, row: str) -> dict[str, float]:
    """Per seed pair, the lowest barrier among the other rows minus `row`'s (matcher seeds averaged): positive
    where `row` is the lowest, as a paper's "this one is best" says."""
    return per_pair(cells, lambda m: min(v for k, v in m.items() if k != row) - m[row])


def ablation_section(family: str, preset: str, summary: list[dict], folder: Path, cells=None) -> list[str]:
    """One ablation preset on one family: its table, a chart (mean ± std over the seed pairs) and what it shows."""
    import pandas as pd

    from symalign.plots.ablation import ablation_figure
    from symalign.sweeps.grid import PRESET_HELP

    fig = ablation_figure(pd.DataFrame(summary), f"{family}, {preset}: mean ± std over the seed pairs")
    chart_path = folder / f"{family}-{preset}.html"
    fig.write_html(chart_path, include_plotlyjs="cdn")
    lines = [f"### {family}: {preset}", "", f"{PRESET_HELP.get(preset, '')} ([chart](results/{chart_path.name})).", "",
             "| row | barrier | ± SE (n) | accuracy barrier (pp) |", "|---|---|---|---|"]
    lines += [f"| {row['row']} | {fmt(row)} | {sem(row)} | "
              f"{row['accuracy_mean']:.1f} ± {row['accuracy_std']:.1f} |" for row in summary]
    if preset == "wm-iterations":
        lines += ["", *iterations_series(family, summary, folder)]
    return lines + ["", finding(preset, summary, cells), ""]


def path_curves(family: str, cells, store: RunStore, folder: Path) -> list[str]:
    """Theus et al. Fig. 5: per λ sampler, the loss along the path above the straight line between the
    endpoints (mean over the seed pairs), read from the sweep's recorded runs."""
    def compute() -> list[tuple[str, list[dict]]]:  # a list: the rows keep the sweep's order
        out = []
        for row, group in cells.groupby("row", sort=False):
            curves = [store.get(r).curve for r in group["run_id"].dropna()]
            out.append((row, [{"lambdas": c["lambdas"], "loss": c["loss"]} for c in curves if c]))
        return out

    fig = go.Figure()
    peaks = []
    for row, curves in records.current().data(f"curves-{family}-lambda-sampling", compute):
        if not curves:
            continue
        lambdas = curves[0]["lambdas"]
        excess = [[loss - ((1 - t) * c["loss"][0] + t * c["loss"][-1]) for t, loss in zip(c["lambdas"], c["loss"])]
                  for c in curves if c["lambdas"] == lambdas]
        mean = [sum(col) / len(col) for col in zip(*excess)]
        fig.add_trace(go.Scatter(x=lambdas, y=mean, mode="lines+markers", name=row))
        peaks.append(f"{row} peaks at λ = {lambdas[mean.index(max(mean))]:.2f} ({max(mean):.3f})")
    fig.update_layout(title=f"{family}: loss above the straight line along the aligned path, per λ sampler "
                            "(Theus et al. Fig. 5)", xaxis_title="λ", yaxis_title="loss − linear interpolation")
    path = folder / f"{family}-lambda-sampling-curves.html"
    fig.write_html(path, include_plotlyjs="cdn")
    return [f"The paths themselves ([chart](results/{path.name}), mean over the seed pairs): " + "; ".join(peaks)
            + ".", ""]


def iterations_series(family: str, summary: list[dict], folder: Path) -> list[str]:
    """Theus et al. Fig. 6: the barrier against weight-matching sweeps, permutations and orthogonal maps as
    two series on one chart, and what each series does (decided from the numbers)."""
    import re

    series: dict[str, list[tuple[int, dict]]] = {}
    for row in summary:
        match = re.match(r"weight \((.+)\), (\d+) sweep", row["row"])
        if match:
            series.setdefault(match.group(1), []).append((int(match.group(2)), row))
    fig = go.Figure()
    text = []
    for classes, points in series.items():
        points.sort(key=lambda p: p[0])
        fig.add_trace(go.Scatter(x=[n for n, _ in points], y=[r["mean"] for _, r in points], mode="lines+markers",
                                 name=classes, error_y={"type": "data", "array": [r["std"] for _, r in points]}))
        first, best = points[0], min(points, key=lambda p: p[1]["mean"])
        falls = first[1]["mean"] - best[1]["mean"] > max(first[1]["std"], best[1]["std"], RESOLUTION)
        text.append(f"{classes}: {first[1]['mean']:.2f} after 1 sweep, lowest {best[1]['mean']:.2f} after {best[0]}"
                    + (" (a fall beyond the spread between seed pairs)" if falls else
                       " (no fall beyond the spread between seed pairs)"))
    fig.update_layout(title=f"{family}: barrier against weight-matching sweeps (Theus et al. Fig. 6)",
                      xaxis_title="sweeps", yaxis_title="loss barrier", xaxis_type="log")
    path = folder / f"{family}-wm-iterations-series.html"
    fig.write_html(path, include_plotlyjs="cdn")
    return [f"Theus et al. Fig. 6 ([chart](results/{path.name})): " + "; ".join(text) + ". Theus et al. report a "
            "steady decrease for orthogonal matching up to about five iterations (ViT, CIFAR-10); different "
            "setting, so the comparison is of shape only."]
