"""An ablation grid as a figure: per row, the loss barrier and the accuracy barrier as mean ± std
over the seed pairs (the bars' whiskers), so a difference between rows can be read against the
spread between pairs, not against one lucky pair."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots


def _spread(values) -> list[float]:
    return [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


def ablation_figure(summary: pd.DataFrame, title: str = "") -> go.Figure:
    """A sweep's summary (symalign.sweeps.sweep.summary_frame: row, mean, std, n, accuracy_mean,
    accuracy_std) as two bar charts side by side with ± std whiskers."""
    has_accuracy = "accuracy_mean" in summary and summary["accuracy_mean"].notna().any()
    fig = make_subplots(rows=1, cols=2 if has_accuracy else 1,
                        subplot_titles=("loss barrier", "accuracy barrier (percentage points)")
                        if has_accuracy else ("loss barrier",))
    n = summary["n"].tolist() if "n" in summary else [None] * len(summary)
    hover = [f"n = {k} pair(s)" if k is not None else "" for k in n]
    fig.add_trace(go.Bar(x=summary["row"].tolist(), y=summary["mean"].tolist(), name="loss barrier", hovertext=hover,
                         error_y={"type": "data", "array": _spread(summary["std"])}), row=1, col=1)
    if has_accuracy:
        fig.add_trace(go.Bar(x=summary["row"].tolist(), y=summary["accuracy_mean"].tolist(), name="accuracy barrier",
                             hovertext=hover,
                             error_y={"type": "data", "array": _spread(summary["accuracy_std"])}), row=1, col=2)
        fig.update_yaxes(title_text="pp", row=1, col=2)
    fig.update_yaxes(title_text="loss barrier (nats)", row=1, col=1)
    fig.update_layout(title=title or "mean ± std over the seed pairs", showlegend=False, height=420,
                      margin=dict(l=50, r=20, t=70, b=40))
    return fig
