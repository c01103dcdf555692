"""The loss plane with paths drawn on it (Garipov et al. Fig. 1; Zhang et al. Fig. 2), and the
straight and curved paths' losses on one chart. Plain data in (a plane's or a curve run's JSON)."""

from __future__ import annotations

import plotly.graph_objects as go

from symalign.plots.legend import legend_below

# Straight lines thin and on top, curves wide underneath: a curve whose bend leaves the plane is drawn as
# its projection, which can run along a straight line, and neither may hide the other.
STRAIGHT_LOOKS = [("#e8e8e8", "solid"), ("#ff7f0e", "dash"), ("#17becf", "dashdot")]
CURVE_LOOKS = [("#d62728", "solid"), ("#e377c2", "solid"), ("#9467bd", "solid")]


def plane_figure(plane: dict, title: str = "", cap: float | None = None) -> go.Figure:
    """A contour map of the loss over the plane, in its orthonormal coordinates (equal scales, so
    distances and angles read true), the named points marked and the paths drawn. `cap`: loss above
    this is drawn at the cap, so a high ridge does not wash out the valleys (default: a little over
    twice the highest marked point's loss)."""
    points = plane["points"]
    if cap is None:
        cap = 2.2 * max(p["loss"] for p in points.values())
    z = [[min(v, cap) for v in row] for row in plane["loss"]]
    top = max(max(row) for row in plane["loss"])
    fig = go.Figure(go.Contour(x=plane["xs"], y=plane["ys"], z=z, colorscale="Viridis", ncontours=24,
                               colorbar=dict(title=f"loss<br>(≥ {cap:.2g} drawn<br>as {cap:.2g}; max<br>{top:.2g})"
                                             if top > cap else "loss"),
                               hovertemplate="x %{x:.2f}, y %{y:.2f}: loss %{z:.3f}<extra></extra>"))
    paths = plane.get("paths", {})
    curves = [n for n in paths if "straight" not in n]
    straight = [n for n in paths if "straight" in n]
    for names, looks, width in ((curves, CURVE_LOOKS, 6), (straight, STRAIGHT_LOOKS, 2.5)):
        for i, name in enumerate(names):
            colour, dash = looks[i % len(looks)]
            fig.add_trace(go.Scatter(x=[p[0] for p in paths[name]], y=[p[1] for p in paths[name]], mode="lines",
                                     name=name, line=dict(color=colour, width=width, dash=dash)))
    fig.add_trace(go.Scatter(x=[p["x"] for p in points.values()], y=[p["y"] for p in points.values()],
                             mode="markers+text", text=[short(n) for n in points], textposition="top center",
                             textfont=dict(color="white", size=14), name="models",
                             marker=dict(color="white", size=11, line=dict(color="black", width=1.5)),
                             hovertext=[f"{n}: loss {p['loss']:.3f}" for n, p in points.items()], hoverinfo="text"))
    fig.update_yaxes(scaleanchor="x", scaleratio=1, title_text="v (orthonormal, parameter units)")
    three = plane["kind"] == "three points"
    fig.update_xaxes(title_text="u (along B − A)" if three else "direction 1 (filter-normalised)")
    if plane["kind"] != "three points":
        fig.update_yaxes(title_text="direction 2 (filter-normalised)")
    # the legend below the x axis title, never over it (issue #56), on screen and in every export
    fig.update_layout(title=title or None, height=560, margin=dict(l=50, r=20, t=60, b=110),
                      legend=dict(orientation="h", yanchor="top", y=-0.2, x=0, bgcolor="#4a4a4a",
                                  font=dict(color="white")))
    return fig


def short(name: str) -> str:
    """A model's reference as a marker label: the zoo name or the folder's last part."""
    if name.startswith("zoo:"):
        return name[len("zoo:"):]
    return name.rstrip("/").rsplit("/", 1)[-1]


def paths_figure(paths: list[tuple[str, dict]], title: str = "") -> go.Figure:
    """Loss along several paths from A (t = 0) to B (t = 1) on one chart: straight lines and curves,
    each with its barrier in the legend. A path is a curve's JSON (`lambdas`, `loss`, `barrier`)."""
    fig = go.Figure()
    # Two paths that coincide must both stay visible (issue #70: the unaligned curve lay exactly under the
    # aligned one): each later path is drawn thinner, in its own dash and marker, on top of the earlier ones.
    looks = [("#7f7f7f", "solid", 6, "circle"), ("#1f77b4", "solid", 4, "square"),
             ("#7f7f7f", "dash", 6, "diamond"), ("#1f77b4", "dot", 2.5, "x")]
    for i, (label, c) in enumerate(paths):
        colour, dash, width, marker = looks[i % len(looks)]
        fig.add_trace(go.Scatter(x=c["lambdas"], y=c["loss"], mode="lines+markers", name=f"{label} (barrier "
                                 f"{c['barrier']:.3f})", line=dict(color=colour, dash=dash, width=width),
                                 marker=dict(symbol=marker, size=width + 4)))
    fig.update_xaxes(title_text="t along the path (0 = model A, 1 = model B)")
    fig.update_yaxes(title_text="loss (nats per prediction)")
    fig.update_layout(title=title or None, margin=dict(l=50, r=20, t=60, b=50))
    return legend_below(fig)
