"""Interpolation curves and barrier bars."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots


def curves_figure(curves: list[tuple[str, dict]], title: str = "",
                  methods: list[str | None] | None = None) -> go.Figure:
    """Loss (left) and accuracy (right) along λ for several curves, each with its straight
    line between endpoint losses dotted, so the barrier is the largest gap one can see. `methods`
    (one per curve): each curve in its method's colour, the same on every page (symalign.plots.colours)."""
    from symalign.plots.colours import styles

    has_acc = any(c.get("accuracy") for _, c in curves)
    fig = make_subplots(rows=1, cols=2 if has_acc else 1,
                        subplot_titles=("loss along the path", "accuracy along the path") if has_acc else ("loss",))
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
            fig.add_trace(go.Scatter(x=lam, y=c["accuracy"], mode="lines+markers", showlegend=False,
                                     line=dict(color=color, dash=dash), legendgroup=label), row=1, col=2)
    fig.update_xaxes(title_text="λ  (0 = model A, 1 = model B)")
    # Axes from a stated baseline (0, and 0-1 for accuracy): an autoscaled axis drew a 0.046 barrier on a
    # 1.84-1.89 axis as a mountain (issue #56)
    fig.update_yaxes(title_text="loss (nats per prediction; axis from 0)", rangemode="tozero", row=1, col=1)
    if has_acc:
        fig.update_yaxes(title_text="accuracy (fraction correct)", range=[0, 1.02], row=1, col=2)
    fig.update_layout(title=title or None, height=420, margin=dict(l=40, r=20, t=60, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=-0.35))
    return fig


def distinct_labels(labels: list[str], ids: list[str]) -> list[str]:
    """Labels made unique with the run's short id where several runs share one: plotly draws bars with
    one category on top of each other, which read as one run's barrier (two demos' "no alignment"
    runs showed as 7.9 where each was 3.9)."""
    counts = {label: labels.count(label) for label in labels}
    return [f"{label} [{run_id[-6:]}]" if counts[label] > 1 else label for label, run_id in zip(labels, ids)]


def barrier_bars(table: pd.DataFrame, label_column: str = "run") -> go.Figure:
    """Both barrier definitions per run, side by side: one pair of bars per run, even where runs share a label."""
    fig = go.Figure()
    labels = table[label_column].astype(str).tolist()
    if "id" in table:
        labels = distinct_labels(labels, table["id"].astype(str).tolist())
    from symalign.plots.colours import method_colour

    colours = [method_colour(m, i) for i, m in enumerate(table["method"])] if "method" in table else None
    fig.add_bar(x=labels, y=table["barrier"].tolist(), name="barrier (above the endpoint line)",
                marker_color=colours)
    fig.add_bar(x=labels, y=table["barrier_mean"].tolist(), name="barrier (above mean endpoint loss)",
                marker_color=colours, marker_opacity=0.45)
    fig.update_layout(barmode="group", height=380, yaxis_title="loss above reference (axis from 0)",
                      yaxis_rangemode="tozero",
                      margin=dict(l=40, r=20, t=30, b=40), legend=dict(orientation="h", y=1.1))
    return fig


def transport_figure(alpha: list[float], task_loss: list[float], base_loss: list[float], title: str = "") -> go.Figure:
    """Task-vector transport: the fine-tune task's and the original task's loss against α."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=alpha, y=task_loss, mode="lines+markers", name="fine-tune task"))
    fig.add_trace(go.Scatter(x=alpha, y=base_loss, mode="lines+markers", name="original task"))
    fig.update_layout(title=title, xaxis_title="α (0 = B as it is)", yaxis_title="evaluation loss", height=380)
    return fig
