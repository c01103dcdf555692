"""Weights as pictures: heat maps of weight matrices side by side on one colour scale, and the
grid of which tensors each component kind acts on (the Symmetries page)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

VARIANCE_CODE = {"": 0.0, "diag": 1.0, "co": 2.0, "contra": 3.0}
VARIANCE_COLOURS = ["#f4f4f4", "#9edae5", "#1f77b4", "#d62728"]


def heatmaps_figure(panels: list[tuple[str, list[list[float]]]], title: str = "") -> go.Figure:
    """One heat map per (title, matrix), all on one symmetric colour scale, so a permutation shows as
    shuffled stripes and a rotation as a different texture with the same range."""
    limit = max((max(abs(v) for row in m for v in row) for _, m in panels), default=1.0) or 1.0
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[t for t, _ in panels], horizontal_spacing=0.04)
    for i, (_, matrix) in enumerate(panels, start=1):
        fig.add_trace(go.Heatmap(z=matrix, zmin=-limit, zmax=limit, colorscale="RdBu", reversescale=True,
                                 showscale=i == len(panels),
                                 hovertemplate="row %{y}, col %{x}: %{z:.3f}<extra></extra>"),
                      row=1, col=i)
        fig.update_yaxes(autorange="reversed", row=1, col=i)
    fig.update_layout(title=title, height=380, margin={"t": 60, "b": 30})
    return fig


def action_figure(names: list[str], kinds: list[str], cells: list[list[str]]) -> go.Figure:
    """Tensors (rows) × component kinds (columns): how each kind's group element reaches each tensor."""
    z = [[VARIANCE_CODE[c] for c in row] for row in cells]
    scale = [[i / 3, colour] for i, colour in enumerate(VARIANCE_COLOURS)]
    fig = go.Figure(go.Heatmap(z=z, x=kinds, y=names, text=cells, texttemplate="%{text}", zmin=0, zmax=3,
                               colorscale=scale, showscale=False, xgap=2, ygap=2,
                               hovertemplate="%{y} · %{x}: %{text}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(side="top")  # the kinds' names above the first rows: a tall grid's first screen shows them
    fig.update_layout(height=max(300, 24 * len(names) + 80), margin={"t": 80, "b": 30},
                      title="co: rows (G·W) · contra: columns (W·G⁻¹) · diag: elementwise gain")
    return fig
