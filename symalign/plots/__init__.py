"""Plotly figures shared by the app and by scripts: curves, barrier bars, simplex surfaces and
eigen-angle spectra, weight heat maps. Figures take plain data (the JSON the CLI prints), never models."""

from symalign.plots.interpolation import barrier_bars, curves_figure, transport_figure
from symalign.plots.simplex import simplex_figure, simplex_figures
from symalign.plots.weights import action_figure, heatmaps_figure, spectrum_figure

__all__ = ["action_figure", "barrier_bars", "curves_figure", "heatmaps_figure", "simplex_figure", "simplex_figures",
           "spectrum_figure", "transport_figure"]
