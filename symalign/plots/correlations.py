"""Feature correlations per layer (before / after alignment, one line per kind) and the head-output
cross-correlation heat maps whose diagonal blocks are the matched heads. They draw `symalign
correlations --json`'s output (symalign.match.activation.correlations.Correlations.to_json)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

KIND_LABELS = {"mlp": "MLP units", "heads": "head outputs", "residual": "residual stream"}
KIND_COLOURS = {"mlp": "#1f77b4", "heads": "#d62728", "residual": "#2ca02c"}


def correlation_curve_figure(result: dict, title: str = "") -> go.Figure:
    """Mean correlation of matched features per layer: dashed before alignment, solid after."""
    fig = go.Figure()
    for kind, label in KIND_LABELS.items():
        rows = [r for r in result["layers"] if r["kind"] == kind]
        for when, dash in (("before", "dash"), ("after", "solid")):
            fig.add_scatter(x=[r["layer"] for r in rows], y=[r[when] for r in rows], mode="lines+markers",
                            name=f"{label}, {when} alignment", line=dict(color=KIND_COLOURS[kind], dash=dash))
    fig.update_layout(title=title or "Correlation of matched features per layer",
                      xaxis_title="block", yaxis_title="mean Pearson correlation of unit i with unit i",
                      yaxis_range=[-0.1, 1.05], xaxis=dict(dtick=1), height=420)
    return fig


def head_map_figure(result: dict, layer: int) -> go.Figure:
    """|corr| of A's head-output features (rows) with B's (columns) in one block, B as given and
    aligned; grid lines at the head boundaries. Needs that block's matrices in `result`."""
    blocks = next(h for h in result["heads"] if h["layer"] == layer)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, subplot_titles=(
        f"B as given: within heads {blocks['within_before']:.2f}, across {blocks['across_before']:.2f}",
        f"B aligned: within heads {blocks['within_after']:.2f}, across {blocks['across_after']:.2f}"))
    for col, key in ((1, "before"), (2, "after")):
        fig.add_heatmap(z=blocks[key], colorscale="Viridis", zmin=0, zmax=1, showscale=col == 2,
                        colorbar=dict(title="|corr|"), row=1, col=col)
        for h in range(1, blocks["heads"]):
            edge = h * blocks["d_head"] - 0.5
            for add in (fig.add_vline, fig.add_hline):
                add(edge, line=dict(color="white", width=1), row=1, col=col)
        fig.update_xaxes(title_text="B's head-output features", row=1, col=col)
        fig.update_yaxes(title_text="A's head-output features" if col == 1 else None, autorange="reversed",
                         row=1, col=col)
    fig.update_layout(title=f"Block {layer}: heads correspond as blocks ({blocks['heads']} heads × "
                            f"{blocks['d_head']} features)", height=480)
    return fig


def correlations_html(result: dict, layer: int, title: str = "") -> str:
    """Both figures in one self-contained page."""
    parts = [correlation_curve_figure(result, title).to_html(full_html=False, include_plotlyjs=True),
             head_map_figure(result, layer).to_html(full_html=False, include_plotlyjs=False)]
    return "<html><head><meta charset='utf-8'></head><body>" + "".join(parts) + "</body></html>"
