"""Loss along the straight line between models: interpolation curves, barrier bars, and the barrier against
width (one line per alignment)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from symalign.plots.colours import styles
from symalign.plots.legend import legend_below


def curves_figure(curves: list[tuple[str, dict]], title: str = "",
                  methods: list[str | None] | None = None, log_loss: bool = False) -> go.Figure:
    """Loss (above) and accuracy (below, on the same λ axis) for several curves, each with its straight
    line between endpoint losses dotted, so the barrier is the largest gap one can see. `methods`
    (one per curve): each curve in its method's colour, the same on every page (symalign.plots.colours)."""
    from symalign.plots.colours import styles

    has_acc = any(c.get("accuracy") for _, c in curves)
    fig = _panels(has_acc)
    looks = styles(list(methods) if methods is not None else [None] * len(curves))
    for i, (label, c) in enumerate(curves):
        color, dash = looks[i]
        lam, loss = c["lambdas"], c["loss"]
        fig.add_trace(go.Scatter(x=lam, y=loss, mode="lines+markers", name=f"{label} (barrier {c['barrier']:.3f})",
                                 line=dict(color=color, dash=dash), legendgroup=label), row=1, col=1)
        fig.add_trace(go.Scatter(x=[lam[0], lam[-1]], y=[loss[0], loss[-1]], mode="lines", showlegend=False,
                                 line=dict(color=color, dash="dot", width=1), legendgroup=label,
                                 hoverinfo="skip"), row=1, col=1)
        if has_acc and c.get("accuracy"):
            fig.add_trace(go.Scatter(x=lam, y=c["accuracy"], mode="lines+markers", showlegend=False, name=label,
                                     line=dict(color=color, dash=dash), legendgroup=label), row=2, col=1)
    return _finished(fig, title, log_loss, has_acc)


def bands_figure(groups: list[tuple[str, str | None, list[dict]]], title: str = "",
                 log_loss: bool = False) -> go.Figure:
    """Mean ± std over seed pairs: per group (label, method, its runs' curves on one λ grid) the mean
    loss and accuracy as a line and one standard deviation either side as a band, in the method's
    colour; the number of pairs is in the legend. What a paper's figure shows, where a single pair
    can mislead (issue #56)."""
    import numpy as np

    from symalign.plots.colours import method_colour

    fig = _panels(True)
    for i, (label, method, curves) in enumerate(groups):
        colour = method_colour(method, i)
        lam = curves[0]["lambdas"]
        for row, key in ((1, "loss"), (2, "accuracy")):
            values = np.array([c[key] for c in curves if c.get(key)], dtype=float)
            if not len(values):
                continue
            mean, std = values.mean(0), values.std(0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1])
            fig.add_trace(go.Scatter(x=lam + lam[::-1], y=list(mean + std) + list((mean - std)[::-1]), fill="toself",
                                     fillcolor=colour, opacity=0.2, line=dict(width=0), hoverinfo="skip",
                                     showlegend=False, legendgroup=label), row=row, col=1)
            fig.add_trace(go.Scatter(x=lam, y=list(mean), mode="lines+markers", line=dict(color=colour),
                                     name=f"{label} (n = {len(values)})", showlegend=row == 1, legendgroup=label),
                          row=row, col=1)
    return _finished(fig, title, log_loss, True)


PANEL_HEIGHT = 250  # px a panel: loss above accuracy, one λ axis under both


def _panels(accuracy: bool) -> go.Figure:
    """Loss above accuracy on one λ axis (issue #70: side by side, the crosshair showed in the hovered panel
    only and the hover label landed on the other panel's axis title)."""
    if not accuracy:
        return make_subplots(rows=1, cols=1, subplot_titles=("loss along the path",))
    return make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14,
                         subplot_titles=("loss along the path", "accuracy along the path"))


def _finished(fig: go.Figure, title: str, log_loss: bool, accuracy: bool) -> go.Figure:
    """Both panels on the bottom λ axis itself (not a matched copy), so one hover and one crosshair run
    through loss and accuracy at the same λ (`hoversubplots="axis"`); the legend below."""
    if accuracy:
        for trace in fig.data:
            trace.xaxis = "x2"
        fig.update_layout(yaxis=dict(anchor="x2"), xaxis=dict(visible=False, matches=None))
    _axes(fig, log_loss, accuracy)
    fig.update_layout(title=title or None, margin=dict(l=40, r=20, t=60, b=40), hovermode="x",
                      hoversubplots="axis", hoverlabel=dict(namelength=40))
    return legend_below(fig, plot_height=2 * PANEL_HEIGHT + 40 if accuracy else PANEL_HEIGHT + 60)


def mark_lambda(fig: go.Figure, lam: float) -> go.Figure:
    """A dashed vertical line at λ through every panel, on the λ axis the traces use."""
    x = fig.data[0].xaxis if fig.data else "x"
    for y in dict.fromkeys(t.yaxis or "y" for t in fig.data):
        fig.add_shape(type="line", x0=lam, x1=lam, xref=x, y0=0, y1=1, yref=f"{y} domain",
                      line=dict(color="#444", width=2, dash="dash"))
    return fig


def _axes(fig: go.Figure, log_loss: bool = False, accuracy: bool = True) -> None:
    """The curves' axes: λ, the loss from 0 (or on a log scale when asked), accuracy over 0-1, and a
    spike line under the pointer through both panels (the crosshair)."""
    fig.update_xaxes(title_text="λ  (0 = model A, 1 = model B)", showspikes=True, spikemode="across",
                     spikethickness=1, spikedash="dot", spikesnap="cursor", hoverformat=".2f")
    fig.update_yaxes(hoverformat=".3f")
    if log_loss:  # labels at 1, 2 and 5 of each decade: every minor tick labelled crowded the axis
        fig.update_yaxes(title_text="loss (nats per prediction; log scale)", type="log", dtick="D2", row=1, col=1)
    else:  # from a stated baseline: an autoscaled axis drew a 0.046 barrier on a 1.84-1.89 axis as a mountain
        fig.update_yaxes(title_text="loss (nats per prediction; axis from 0)", rangemode="tozero", row=1, col=1)
    if accuracy:
        fig.update_yaxes(title_text="accuracy (fraction correct)", range=[0, 1.02], row=2, col=1)


def distinct_labels(labels: list[str], ids: list[str]) -> list[str]:
    """Labels made unique with the run's short id where several runs share one: plotly draws bars with
    one category on top of each other, which read as one run's barrier (two demos' "no alignment"
    runs showed as 7.9 where each was 3.9)."""
    counts = {label: labels.count(label) for label in labels}
    return [f"{label} [{run_id[-6:]}]" if counts[label] > 1 else label for label, run_id in zip(labels, ids)]


def barrier_bars(table: pd.DataFrame) -> go.Figure:
    """Compare's chart: barriers grouped by model pair (short names on the axis, never rotated), one
    colour per method with the method once in the legend, a run's second definition (above the mean
    endpoint loss) and its models in the hover. The legend sits above the plot, so neither the screen
    nor an SVG or PNG export puts it over an axis (issue #56: rotated run labels squashed the plot,
    two methods shared a colour, the legend covered the λ title)."""
    from symalign.plots.colours import lighter, method_colour
    from symalign.plots.names import pair_label

    fig = go.Figure()
    pairs = [pair_label(m.split(" · ")) for m in table["models"]]
    order = list(dict.fromkeys(pairs))
    methods = list(dict.fromkeys(table["method"]))
    classes = [str(c) for c in table["classes"]] if "classes" in table else [""] * len(table)
    variants = {m: list(dict.fromkeys(c for c, mm in zip(classes, table["method"]) if mm == m)) for m in methods}
    repeats: dict[tuple[str, str, str], int] = {}
    traces: dict[tuple[str, int, int], dict] = {}  # (method, its classes variant, repeat): one bar per pair
    for pair, cls, (_, row) in zip(pairs, classes, table.iterrows()):
        k = repeats.get((pair, row["method"], cls), 0)
        repeats[(pair, row["method"], cls)] = k + 1
        t = traces.setdefault((row["method"], variants[row["method"]].index(cls), k), {"x": [], "y": [], "text": []})
        t["x"].append(pair)
        t["y"].append(row["barrier"])
        short = str(row.get("id", ""))[-6:]  # a run labelled by hand has no id in its label
        name = row["run"] if short in row["run"] else f"{row['run']} [{short}]"
        t["text"].append(f"{name}<br>{row['models']}<br>barrier {row['barrier']:.4f}"
                         + (f" · above mean endpoint loss {row['barrier_mean']:.4f}"
                            if pd.notna(row.get("barrier_mean")) else ""))
    for (method, v, k), t in sorted(traces.items(), key=lambda kv: (methods.index(kv[0][0]), kv[0][1], kv[0][2])):
        # a method run with several class sets: one legend entry per set, the later ones lighter (issue #56: a
        # lighter "weight" bar had no entry saying it was permutations only)
        name = method if len(variants[method]) == 1 else f"{method}: {variants[method][v]}"
        colour = method_colour(method, methods.index(method))
        fig.add_bar(x=t["x"], y=t["y"], name=name, legendgroup=name, showlegend=k == 0,
                    marker_color=colour if v + k == 0 else lighter(colour, min(0.7, 0.45 * (v + k))),
                    hovertext=t["text"], hoverinfo="text")
    fig.update_layout(barmode="group", height=420, yaxis_title="barrier (loss above the endpoint line; axis from 0)",
                      yaxis_rangemode="tozero", xaxis=dict(categoryorder="array", categoryarray=order, tickangle=0,
                                                           automargin=True),
                      margin=dict(l=60, r=20, t=70, b=50), legend=dict(orientation="h", x=0, y=1.02, xanchor="left",
                                                                      yanchor="bottom", title_text="method"))
    return fig


def transport_figure(alpha: list[float], task_loss: list[float], base_loss: list[float], title: str = "") -> go.Figure:
    """Task-vector transport: the fine-tune task's and the original task's loss against α."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=alpha, y=task_loss, mode="lines+markers", name="fine-tune task"))
    fig.add_trace(go.Scatter(x=alpha, y=base_loss, mode="lines+markers", name="original task"))
    fig.update_layout(title=title, xaxis_title="α (0 = B as it is)", yaxis_title="evaluation loss", height=380)
    return fig


def width_figure(lines: list[dict], methods: dict[str, str] | None = None, title: str = "") -> go.Figure:
    """`lines`: records of width, row, barrier, std and closed (symalign.sweeps.widths.width_table);
    `methods`: row name -> method, so each alignment keeps its colour from every other page."""
    rows = list(dict.fromkeys(line["row"] for line in lines))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss barrier", "share of the vanilla barrier closed"))
    for name, (colour, dash) in zip(rows, styles([(methods or {}).get(r) for r in rows])):
        mine = sorted((line for line in lines if line["row"] == name), key=lambda line: line["width"])
        widths = [line["width"] for line in mine]
        fig.add_trace(go.Scatter(x=widths, y=[line["barrier"] for line in mine], name=name, mode="lines+markers",
                                 line=dict(color=colour, dash=dash), legendgroup=name,
                                 error_y={"type": "data", "array": [line.get("std") or 0.0 for line in mine]}),
                      row=1, col=1)
        closed = [line["closed"] for line in mine]
        if name != "vanilla" and not all(c is None or (isinstance(c, float) and math.isnan(c)) for c in closed):
            fig.add_trace(go.Scatter(x=widths, y=[100 * c for c in closed], name=name, mode="lines+markers",
                                     line=dict(color=colour, dash=dash), legendgroup=name, showlegend=False),
                          row=1, col=2)
    ticks = sorted({line["width"] for line in lines})
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[str(t) for t in ticks], title_text="residual width")
    fig.update_yaxes(title_text="loss barrier (nats per prediction)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="closed (%)", row=1, col=2)
    fig.update_layout(title=title or "the barrier against width", height=420, margin=dict(l=60, r=20, t=70, b=50))
    return fig
