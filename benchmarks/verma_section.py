"""Verma & Elbayad's MLM tables in their own setting, for docs/results.md (results_report.py --verma).

Runs `symalign sweep --preset verma-heads|verma-residual|verma-components` on the zoo's masked-LM
BERTs (three seed pairs) and writes each table with the paper's values beside the zoo's mean ± SE
and the verdict the preset decides from the numbers (symalign.sweeps.verma)."""

from __future__ import annotations

from symalign.sweeps.verma import verma_cells, verma_summary, verma_text
from symalign.sweeps.verma_tables import VERMA_TABLES

HEADING = "## Verma & Elbayad's masked-LM tables in their setting"


def verma_section(points: int | None = None, max_examples: int | None = None) -> list[str]:
    lines = [HEADING, "",
             "Post-LN masked-LM BERTs (`zoo:bert-shakespeare/0,1,2`, all three pairs), activation-based "
             "permutations, B relabelled and then interpolated with A; barriers in pseudo-perplexity (every "
             "position masked in turn, Verma & Elbayad's metric) and in loss, against the models as trained "
             "(a row that is not a symmetry is charged for the endpoint it breaks). `symalign sweep --preset "
             "NAME` reproduces each table.", ""]
    for preset, table in VERMA_TABLES.items():
        cells = verma_cells(preset, points=points or 21, max_examples=max_examples)
        summary = verma_summary(cells)
        lines += [f"### {table.source}: `{preset}`", "", f"Setting: {table.setting}. Paper: {table.paper_metric}.",
                  "", verma_text(preset, summary, cells, markdown=True), ""]
    return lines
