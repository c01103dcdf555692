"""Figures for a projector or a paper: one restyling applied to any of symalign's figures.

On a projector at 1600 px the default 11-12 px ticks and legends cannot be read from the back of a
room, and light grey titles vanish. `projector` sets every text to at least 18 px in near-black,
thickens lines and markers, and widens the margins the larger labels need; the data, colours and
layout stay as they were, so the figure is the same one a user saw on the page."""

from __future__ import annotations

import plotly.graph_objects as go

from symalign.plots.legend import legend_names, legend_rows

TEXT = "#111111"
BASE, TITLE = 20, 26  # px: axis titles and annotations at BASE, ticks and legend at BASE - 2 (18)
# px: the plots' share (Home's demo, its numbers and the λ slider fit one 1280×720 screen), one legend row at 18 px
PROJECTOR_PLOTS, PROJECTOR_ROW = 440, 32
# px: an exported projector figure is slide-wide (the page stretches figures to its own width anyway); at
# plotly's default 700 px a run label at 18 px ran off the canvas
SLIDE_WIDTH = 1280


def projector(fig: go.Figure) -> go.Figure:
    """A copy of `fig` readable on a projector (fonts ≥ 18 px, dark text, thicker lines)."""
    out = go.Figure(fig)
    height, bottom = max(out.layout.height or 450, 560), 80
    if out.layout.legend.yref == "container":  # a legend under the plots (plots.legend): rows at the larger font
        rows = legend_rows(legend_names(out), SLIDE_WIDTH - 130, BASE - 2)
        height, bottom = PROJECTOR_PLOTS + PROJECTOR_ROW * rows, 100 + PROJECTOR_ROW * rows
    out.update_layout(font=dict(size=BASE, color=TEXT), title_font=dict(size=TITLE, color=TEXT),
                      legend=dict(font=dict(size=BASE - 2, color=TEXT)),
                      margin=dict(l=90, r=40, t=70, b=bottom), height=height, width=SLIDE_WIDTH)
    out.update_xaxes(automargin=True)  # Streamlit's plotly template (the app's) leaves axes without it
    out.update_yaxes(automargin=True)
    out.update_xaxes(title_font=dict(size=BASE, color=TEXT), tickfont=dict(size=BASE - 2, color=TEXT))
    out.update_yaxes(title_font=dict(size=BASE, color=TEXT), tickfont=dict(size=BASE - 2, color=TEXT))
    out.update_annotations(font=dict(size=BASE, color=TEXT))  # subplot titles and labelled lines
    for trace in out.data:
        if trace.type == "scatter":
            width = (trace.line.width or 2) if trace.line is not None else 2
            trace.update(line=dict(width=max(3, width)), marker=dict(size=9))
    return out


def export_config(fmt: str, name: str) -> dict:
    """Plotly's camera button saving `fmt` (png at twice the size, or svg for a paper) as `name`."""
    return {"toImageButtonOptions": {"format": fmt, "filename": name, "scale": 2 if fmt == "png" else 1},
            "displaylogo": False}
