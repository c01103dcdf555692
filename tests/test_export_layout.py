"""Exported figures read back (issue #56): every figure with a legend, as the page draws it and in the
projector view, is written to SVG and PNG by kaleido and the SVG is laid out again in chromium. No
legend entry may overlap another or be cut off, and the legend may cover no axis title, tick label,
subplot title or plotting area. The PNG is the same drawing at twice the size (the camera button's
scale). Realistic labels: the app's long run names, six curves, ten runs over three pairs."""

from __future__ import annotations

import math
import struct

import pandas as pd
import pytest
from browser_support import chromium, require_chromium

from research.figure_boxes import layout_problems, read_boxes
from symalign.plots import barrier_bars, curves_figure, spectrum_figure
from symalign.plots.interpolation import bands_figure, width_figure
from symalign.plots.plane import paths_figure
from symalign.plots.presentation import projector
from symalign.plots.static_files import figure_file, one_browser, static_export_missing

pytestmark = pytest.mark.slow
require_chromium()


def curve(barrier: float) -> dict:
    lam = [i / 20 for i in range(21)]
    return {"lambdas": lam, "loss": [1 + 4 * barrier * x * (1 - x) for x in lam],
            "accuracy": [0.9 - 1.6 * x * (1 - x) for x in lam], "barrier": barrier}


def figures() -> dict:
    methods = ["none", "weight", "activation", "learned", "soft", "weight"]
    curves = [(f"{m}: zoo:gpt-shakespeare/0 ↔ zoo:gpt-shakespeare/{1 + i % 2} [4b68{i}1]", curve(1.2 / (i + 1)))
              for i, m in enumerate(methods)]
    rows = []
    for pair in ((0, 1), (0, 2), (1, 2)):
        for method in ("none", "weight", "learned") + (("activation",) if pair == (0, 1) else ()):
            rows.append({"run": f"{method} [abc{len(rows)}]", "method": method, "barrier": 1.0 + len(rows) / 10,
                         "models": " · ".join(f"zoo:vit-digits/{i}" for i in pair), "barrier_mean": 1.1})
    angles = [i * math.pi / 40 for i in range(40)]
    spectrum = {"summary": {kind: {"median": 0.05, "share_below_0.1": 0.8} for kind in ("qk", "vo", "residual")},
                "components": [{"kind": kind, "layer": layer, "angles": angles}
                               for kind in ("qk", "vo") for layer in range(6)]
                + [{"kind": "residual", "layer": None, "angles": angles}]}
    widths = [{"width": w, "row": row, "barrier": b / w * 64, "std": 0.01, "closed": None if row == "vanilla" else 0.9}
              for w in (32, 64, 128, 256) for row, b in (("vanilla", 1.0), ("weight (all)", 0.5),
                                                          ("learned (all)", 0.1))]
    return {
        "curves": curves_figure(curves, methods=methods),
        "bands": bands_figure([(f"{m}: gpt-shakespeare", m, [curve(1.0), curve(1.5), curve(0.5)])
                               for m in ("none", "weight", "learned")]),
        "compare": barrier_bars(pd.DataFrame(rows)),
        "paths": paths_figure([(f"{kind} {what}", curve(b)) for kind, b in (("straight", 1.0), ("curve", 0.1))
                               for what in ("before alignment", "after weight matching")]),
        "spectrum": spectrum_figure(spectrum),
        "width": width_figure(widths, {"vanilla": "none", "weight (all)": "weight", "learned (all)": "learned"}),
    }


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


@pytest.fixture(scope="module", params=["plotly", "streamlit"])
def exported(request) -> dict:
    """(figure, view) -> (SVG text, PNG width and height) as kaleido writes them, under plotly's default
    template and under Streamlit's (the default in the app, once streamlit is imported). All
    exports are made before chromium is driven: kaleido's own headless browser and Playwright's event
    loop are kept apart (an export interleaved with an open Playwright page once hung on a loaded machine)."""
    missing = static_export_missing()
    if missing:
        raise AssertionError(missing)  # chromium is here (require_chromium), so kaleido must draw with it
    import plotly.io as pio
    import streamlit  # noqa: F401  (registers its template; the app draws and exports with it)

    before, pio.templates.default = pio.templates.default, request.param  # the CI found the streamlit case
    out = {}
    try:
        with one_browser():  # one kaleido browser for all 25 exports (0.3 s an export instead of 2.3 s)
            for name, fig in figures().items():
                for view in ("page", "projector"):
                    shown = projector(fig) if view == "projector" else fig
                    out[name, view] = (figure_file(shown, "svg").decode(), png_size(figure_file(shown, "png", scale=2)))
            broken = figures()["curves"]  # the layout the issue found: a legend anchored inside the plot's bottom
            broken.update_layout(legend=dict(orientation="h", yref="paper", yanchor="bottom", y=-0.35), height=420)
            out["broken", "page"] = (figure_file(broken, "svg").decode(), None)
    finally:
        pio.templates.default = before
    return out


@pytest.fixture(scope="module")
def page(exported):
    with chromium() as browser:
        yield browser.new_page()


@pytest.mark.parametrize("view", ["page", "projector"])
def test_exported_figures_keep_their_legends_off_the_axes_and_inside_the_canvas(exported, page, view):
    problems = {}
    for (name, shown_as), (svg, png) in exported.items():
        if shown_as != view or name == "broken":
            continue
        boxes = read_boxes(page, svg)
        assert boxes["entries"], f"{name}: no legend found in the export (the check would see nothing)"
        found = layout_problems(boxes)
        if found:
            problems[name] = found
        assert png == (2 * boxes["canvas"][2], 2 * boxes["canvas"][3]), name  # the same drawing at twice the size
    assert not problems, problems


def test_the_check_sees_a_legend_over_the_axis_title(exported, page):
    """The layout the issue found (a horizontal legend anchored inside the plot's bottom edge, growing up)."""
    found = layout_problems(read_boxes(page, exported["broken", "page"][0]))
    assert any("title" in p for p in found)  # the λ title under the legend (and, with plotly's template, the data)
