"""Ternary heat maps of the loss over the simplex of three models, with contours.

The barycentric grid is drawn in the plane (corners A, B, C of an equilateral triangle) and
interpolated linearly inside each grid triangle onto a fine raster (scipy's griddata on the
grid's own triangulation), so a contour plot shows it; outside the simplex stays blank. Grid
points inside the near-zero region (loss ≤ plane through the corner losses + ε) are white dots,
and a dashed white line marks that region's edge.
Several surfaces share one colour scale so that methods compare at a glance."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from scipy.interpolate import griddata

CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])
COLORSCALE = "Viridis"


def to_plane(weights) -> np.ndarray:
    """Barycentric [w_A, w_B, w_C] rows to x, y in the triangle A(0,0), B(1,0), C(½, √3/2)."""
    return np.asarray(weights, dtype=float) @ CORNERS


def _raster(weights, values, n: int = 121) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs, ys = np.linspace(0, 1, n), np.linspace(0, CORNERS[2, 1], n)
    gx, gy = np.meshgrid(xs, ys)
    z = griddata(to_plane(weights), np.asarray(values, dtype=float), (gx, gy), method="linear")
    return xs, ys, z


def _add_surface(fig: go.Figure, surface: dict, labels: tuple[str, str, str], col: int, show_scale: bool,
                 value: str) -> None:
    weights = surface["weights"]
    plane = [sum(w * c for w, c in zip(ws, surface["corner_loss"])) for ws in weights]
    excess = [l - p for l, p in zip(surface["loss"], plane)]
    shown = surface["loss"] if value == "loss" else excess
    xs, ys, z = _raster(weights, shown)
    fig.add_trace(go.Contour(x=xs, y=ys, z=z, coloraxis="coloraxis", ncontours=14, connectgaps=False,
                             contours=dict(coloring="heatmap", showlines=True), line=dict(width=0.5, color="white"),
                             hoverinfo="skip", showscale=show_scale), row=1, col=col)
    _, _, ez = _raster(weights, excess)
    eps = surface.get("epsilon", 0.05)
    fig.add_trace(go.Contour(x=xs, y=ys, z=ez, showscale=False, hoverinfo="skip", connectgaps=False,
                             contours=dict(coloring="none", start=eps, end=eps, size=1, showlabels=False),
                             line=dict(color="white", width=2.5, dash="dash"), name=f"barrier = ε ({eps:g})"),
                  row=1, col=col)
    pts = to_plane(weights)
    hover = [f"w = ({w[0]:.2f}, {w[1]:.2f}, {w[2]:.2f})<br>loss {l:.4f}<br>above plane {e:+.4f}"
             for w, l, e in zip(weights, surface["loss"], excess)]
    near = [e <= eps for e in excess]  # white dots: grid points inside the near-zero region
    fig.add_trace(go.Scatter(x=pts[:, 0], y=pts[:, 1], mode="markers", text=hover, hoverinfo="text", showlegend=False,
                             marker=dict(size=[6 if n else 4 for n in near],
                                         color=["white" if n else "rgba(0,0,0,0.35)" for n in near],
                                         line=dict(width=[0.5 if n else 0 for n in near], color="black"))),
                  row=1, col=col)
    outline = np.vstack([CORNERS, CORNERS[:1]])
    fig.add_trace(go.Scatter(x=outline[:, 0], y=outline[:, 1], mode="lines", line=dict(color="black", width=1.5),
                             hoverinfo="skip", showlegend=False), row=1, col=col)
    # Below the bottom corners, anchored inwards (A's text starts at A, B's ends at B), above the top one: set
    # outwards, the right corner's value of one panel ran into the left corner's of the next ("0.0680.180")
    places = [(0.0, -0.07, "left"), (0.0, -0.07, "right"), (0.0, 0.06, "center")]
    for (x, y), (dx, dy, anchor), label, loss in zip(CORNERS, places, labels, surface["corner_loss"]):
        fig.add_annotation(x=x + dx, y=y + dy, text=f"<b>{label}</b> {loss:.3f}", showarrow=False, xanchor=anchor,
                           font=dict(size=11), row=1, col=col)


def simplex_figures(surfaces: list[tuple[str, dict]], labels: tuple[str, str, str] = ("A", "B", "C"),
                    value: str = "loss", zrange: tuple[float, float] | None = None) -> go.Figure:
    """One ternary panel per (title, surface JSON), side by side on one colour scale."""
    if value not in ("loss", "barrier"):
        raise ValueError("value is 'loss' or 'barrier' (loss above the corner plane)")
    titles = [f"{t}<br><sup>max barrier {s['max_barrier']:.3f} · near-zero {100 * s['near_zero_fraction']:.0f}%"
              f"</sup>" for t, s in surfaces]
    fig = make_subplots(rows=1, cols=len(surfaces), subplot_titles=titles, horizontal_spacing=0.04)
    for i, (_, surface) in enumerate(surfaces, start=1):
        _add_surface(fig, surface, labels, i, i == len(surfaces), value)
        fig.update_xaxes(visible=False, range=[-0.1, 1.1], row=1, col=i)
        fig.update_yaxes(visible=False, range=[-0.12, 0.97], scaleanchor=f"x{i if i > 1 else ''}", row=1, col=i)
    if zrange is None:
        allv = [v for _, s in surfaces for v in (s["loss"] if value == "loss" else
                [l - sum(w * c for w, c in zip(ws, s["corner_loss"])) for ws, l in zip(s["weights"], s["loss"])])]
        zrange = (min(allv), max(allv))
    fig.update_layout(coloraxis=dict(colorscale=COLORSCALE, cmin=zrange[0], cmax=zrange[1],
                                     colorbar=dict(title=value if value == "loss" else "above plane")),
                      height=470, margin=dict(l=10, r=10, t=80, b=10), plot_bgcolor="white", showlegend=False)
    return fig


def simplex_figure(surface: dict, title: str = "", labels: tuple[str, str, str] = ("A", "B", "C"),
                   value: str = "loss") -> go.Figure:
    return simplex_figures([(title or surface.get("method", ""), surface)], labels, value)
