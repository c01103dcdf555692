"""Sweeps: a grid of alignments over model pairs, matcher rows and seeds, run on Ray or serially,
reusing cells the run history already holds, tabulated as mean ± std over pairs.

Names load on first use: the CLI reads `executors.EXECUTORS` without loading pandas or torch."""

from symalign.registry import lazy_exports

_HOMES = {"PRESETS": "grid", "Grid": "grid", "preset_grid": "grid", "read_grid": "grid",
          "SweepResult": "sweep", "run_sweep": "sweep"}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
