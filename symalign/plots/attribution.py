"""The barrier by parameter group, ranked: one bar pair per group (the rest at A, the rest at B)
beside a line at the whole path's barrier."""

from __future__ import annotations

import plotly.graph_objects as go


def attribution_figure(result: dict) -> go.Figure:
    """`symalign attribute --json`'s output as a ranked horizontal bar chart."""
    groups = list(reversed(result["groups"]))  # the highest on top
    names = [g["group"] for g in groups]
    fig = go.Figure()
    fig.add_bar(y=names, x=[g["rise_at_a"] for g in groups], orientation="h", name="this group halfway, rest at A")
    fig.add_bar(y=names, x=[g["rise_at_b"] for g in groups], orientation="h", name="this group halfway, rest at B")
    fig.add_vline(x=result["barrier"], line=dict(color="black", dash="dash"),
                  annotation_text=f"whole path's barrier {result['barrier']:.3f}")
    fig.update_layout(barmode="group", title=f"Where the barrier lives ({result['method']}): {result['a']} ↔ "
                                             f"{result['b']}", xaxis_title="loss added at λ = 0.5 (nats)",
                      height=max(320, 40 * len(names) + 140), margin=dict(l=140, r=20, t=60, b=40))
    return fig


def swap_figure(result: dict) -> go.Figure:
    """`symalign attribute --swap --json`'s output: each group's barrier with only its transform
    learned, between lines at weight matching's and learned matching's barriers."""
    swaps = list(reversed(result["swaps"]))  # the lowest barrier on top
    fig = go.Figure()
    fig.add_bar(y=[s["group"] for s in swaps], x=[s["barrier"] for s in swaps], orientation="h",
                name="only this group's transform learned", text=[f"{100 * s['closed']:.0f}%" for s in swaps],
                textposition="outside")
    for value, label, dash in ((result["weight_barrier"], "weight matching", "dash"),
                               (result["learned_barrier"], f"{result['method']} matching", "dot")):
        fig.add_vline(x=value, line=dict(color="black", dash=dash), annotation_text=f"{label} {value:.3f}")
    fig.update_layout(title=f"Which transform carries the learned gain: {result['a']} ↔ {result['b']}",
                      xaxis_title="barrier (nats)", height=max(320, 40 * len(swaps) + 140),
                      margin=dict(l=140, r=20, t=60, b=40))
    return fig
