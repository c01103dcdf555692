"""Verma & Elbayad's MLM tables in their own setting, for docs/results.md (results_report.py --verma).

Runs `symalign sweep --preset verma-heads|verma-residual|verma-components` on the zoo's masked-LM
BERTs (three seed pairs) and writes each table with the paper's values beside the zoo's mean ± SE
and the verdict the preset decides from the numbers (symalign.sweeps.verma)."""

from __future__ import annotations

from research.docgen import records
from symalign.sweeps.verma import verma_cells, verma_summary, verma_text
from symalign.sweeps.verma_tables import VERMA_TABLES

HEADING = "## Verma & Elbayad's masked-LM tables in their setting"


def verma_section(points: int | None = None, max_examples: int | None = None) -> list[str]:
    lines = [HEADING, "",
             "Post-LN masked-LM BERTs (`zoo:bert-shakespeare/0,1,2`, all three pairs), activation-based "
             "permutations, B relabelled and then interpolated with A. Each table's verdict is decided on the "
             "paper's measure: the masked-LM loss barrier against the average of the two models' losses (their "
             "eq. 10, Tables 1-2), beside the paper's value ± its standard error; Fig. 3's claim is decided on "
             "their eq. 11 pseudo-perplexity (over the 15% masked tokens: exp of the masked loss), the measure "
             "the paper plots; symalign's every-position pseudo-perplexity (Salazar et al.) is given under its "
             "own name and decides nothing. Barriers are "
             "against the models as trained (a row that is not a symmetry is charged for the endpoint it "
             "breaks). `symalign paper verma-table1|verma-table2|verma-fig3 --run` (or `symalign sweep --preset "
             "NAME`) reproduces each table.", ""]
    for preset, table in VERMA_TABLES.items():
        if table.task != "masked-lm":  # the classifier table (Table 3) runs as `symalign paper verma-table3`
            continue
        cells = records.current().frame(f"verma-{preset}", lambda preset=preset: verma_cells(
            preset, points=points or 21, max_examples=max_examples))
        summary = verma_summary(cells)
        lines += [f"### {table.source}: `{preset}`", "", f"Setting: {table.setting}. Paper: {table.paper_metric}.",
                  "", verma_text(preset, summary, cells, markdown=True), ""]
    return lines
