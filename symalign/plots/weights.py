"""Weights as pictures: heat maps of weight matrices side by side on one colour scale, and the
grid of which tensors each component kind acts on (the Symmetries page), and histograms of the eigen-angles of
learned orthogonal corrections (one panel per component kind)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from symalign.plots.legend import legend_below

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


KIND_TITLES = {"residual": "residual stream", "qk": "inside heads: QK", "vo": "inside heads: VO"}
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
RESIDUAL_COLOR = "#555555"


def spectrum_figure(spectrum: dict, bin_size: float = math.pi / 60) -> go.Figure:
    """`spectrum` is what `symalign spectrum --json` prints."""
    kinds = list(spectrum["summary"])
    titles = [f"{KIND_TITLES.get(k, k)}<br><sup>median {spectrum['summary'][k]['median']:.3f} rad · "
              f"{100 * spectrum['summary'][k]['share_below_0.1']:.0f}% below 0.1</sup>" for k in kinds]
    fig = make_subplots(rows=1, cols=len(kinds), subplot_titles=titles, horizontal_spacing=0.06)
    layers = sorted({c["layer"] for c in spectrum["components"] if c["layer"] is not None})
    for col, kind in enumerate(kinds, start=1):
        for comp in (c for c in spectrum["components"] if c["kind"] == kind):
            label = "residual" if comp["layer"] is None else f"layer {comp['layer']}"
            if "model" in comp:
                label = f"model {comp['model']} · {label}"
            color = RESIDUAL_COLOR if comp["layer"] is None else PALETTE[layers.index(comp["layer"]) % len(PALETTE)]
            fig.add_trace(go.Histogram(x=comp["angles"], name=label, legendgroup=label, marker_color=color,
                                       opacity=0.75, xbins=dict(start=0, end=math.pi, size=bin_size),
                                       showlegend=col == len(kinds) or kind == "residual"), row=1, col=col)
        fig.add_vline(x=0.1, line=dict(color="gray", dash="dot"), row=1, col=col)
        fig.update_xaxes(title_text="eigen-angle θ (rad)", range=[0, math.pi], row=1, col=col)
    fig.update_yaxes(title_text="eigenvalues", row=1, col=1)
    fig.update_layout(barmode="stack", margin=dict(l=40, r=20, t=80, b=40))
    return legend_below(fig)
