"""One legend placement for figures whose legend goes under the plots.

A legend anchored to the plotting area grows *upward* over the data and the λ title as its entries
wrap (issue #56: in exports it covered the axis title and, at projector size, the curves). Anchored
to the bottom of the whole figure instead, Plotly widens the bottom margin to fit it; the figure
grows by the legend's rows so the plots keep their height. The rows are estimated by packing the
entries' widths into the figure's width (long run labels take a row each, short ones share), so a
projector figure of three short entries stays one row high and fits a 1280×720 screen."""

from __future__ import annotations

import plotly.graph_objects as go

PLOT_HEIGHT, ROW = 380, 24  # px: the plots' share of the figure, and one legend row at the page's font size
PAGE_WIDTH, FONT = 900, 12  # px: the width a page figure is laid out at (at least), and the legend's font
SYMBOL = 45  # px: an entry's line sample and gaps beside its text
CHAR = 0.56  # an average character's width in ems (Plotly's default sans-serif)


def legend_names(fig: go.Figure) -> list[str]:
    """The legend's entries: named traces not hidden from it, one per group."""
    names, groups = [], set()
    for trace in fig.data:
        if trace.showlegend is False or not trace.name:
            continue
        group = trace.legendgroup or id(trace)
        if group not in groups:
            groups.add(group)
            names.append(trace.name)
    return names


def legend_rows(names: list[str], width: float, font: float) -> int:
    """Rows a horizontal legend of `names` takes at `width` px and `font` px: entries packed in order."""
    rows, used = 0, width
    for name in names:
        need = SYMBOL + CHAR * font * len(name)
        if used + need > width:
            rows, used = rows + 1, 0.0
        used += need
    return rows


AXIS_ROOM = 70  # px under the plots for tick labels and the axis title, at the page's font


def legend_below(fig: go.Figure, plot_height: int = PLOT_HEIGHT, row: int = ROW, width: float = PAGE_WIDTH,
                 font: float = FONT, axis_room: int = AXIS_ROOM) -> go.Figure:
    """Put the legend at the figure's bottom, under the axis titles, and make room for its rows: an
    explicit bottom margin and axes that push their own margins, because the app's plotly template
    (Streamlit's, the default once streamlit is imported) sets neither, and Plotly's margin growth for
    the legend alone then left it over the tick labels in SVG exports."""
    rows = legend_rows(legend_names(fig), width, font)
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left"),
                      height=plot_height + row * rows, margin=dict(b=axis_room + row * rows))
    return fig
