"""Histograms of the eigen-angles of learned orthogonal corrections: one panel per component kind
(residual, QK, VO), one colour per layer, angles in [0, π] (0: learning left that plane alone)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from symalign.plots.legend import legend_below

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
