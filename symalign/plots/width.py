"""The barrier against width: one line per alignment (barrier, ± std where several cells share a
width) and, beside it, the share of the vanilla barrier each alignment closes. Width is drawn on a
log scale because the family doubles it from member to member."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from symalign.plots.colours import styles


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
