"""Work that runs many alignments: sweeps over a grid (on Ray or serially)."""

from symalign.jobs.grid import PRESETS, Grid, preset_grid, read_grid
from symalign.jobs.sweep import SweepResult, run_sweep

__all__ = ["PRESETS", "Grid", "SweepResult", "preset_grid", "read_grid", "run_sweep"]
