"""Plotly figures shared by the app and by scripts: curves, barrier bars, simplex surfaces and
eigen-angle spectra. Figures take plain data (the JSON the CLI prints), never models."""

from symalign.plots.curves import barrier_bars, curves_figure
from symalign.plots.simplex import simplex_figure, simplex_figures
from symalign.plots.spectrum import spectrum_figure

__all__ = ["barrier_bars", "curves_figure", "simplex_figure", "simplex_figures", "spectrum_figure"]
