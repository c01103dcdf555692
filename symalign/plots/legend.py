"""One legend placement for figures whose legend goes under the plots.

A legend anchored to the plotting area grows *upward* over the data and the λ title as its entries
wrap (issue #56: in exports it covered the axis title and, at projector size, the curves). Anchored
to the bottom of the whole figure instead, Plotly widens the bottom margin to fit it; the figure
grows by one row per entry so the plots keep their height (one entry a row is the case of long run
labels; short ones share rows and leave a little air)."""

from __future__ import annotations

import plotly.graph_objects as go

PLOT_HEIGHT, ROW = 380, 24  # px: the plots' share of the figure, and one legend row at the page's font size


def legend_entries(fig: go.Figure) -> int:
    """Entries the legend will show: traces with a name that are not hidden from it, one per group."""
    groups = set()
    for trace in fig.data:
        if trace.showlegend is False or not trace.name:
            continue
        groups.add(trace.legendgroup or id(trace))
    return len(groups)


def legend_below(fig: go.Figure, plot_height: int = PLOT_HEIGHT, row: int = ROW) -> go.Figure:
    """Put the legend at the figure's bottom, under the axis titles, and make room for its rows."""
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left"),
                      height=plot_height + row * legend_entries(fig))
    return fig
