"""docs/results.md's "The merging and transport papers' own tables" section (results_report.py --papers
FAMILY[=DIR] ...; issue #55).

Per family: Zhang et al.'s Table 2 (`symalign sweep --preset zhang-table2`: six fusion methods without
matching, after matching without rescaling, after matching) and TransFusion's Table 3 and Fig. 4 (the
`transfusion-*` presets: task-vector transport by head strategy, and against α). Every verdict is
decided from the numbers by symalign.sweeps.zhang / transfusion; paper values are those transcribed
there. FAMILY=DIR reads the cells `symalign sweep --preset P --family FAMILY --out DIR` wrote."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from research.docgen import records
from symalign.sweeps import transfusion as tf
from symalign.sweeps import zhang_figures as zf
from symalign.sweeps.zhang import FIG3_STATES, STATES, zhang_cells, zhang_summary, zhang_text

HEADING = "## The merging and transport papers' own tables"


def _cells(folder: Path | None, names: tuple[str, ...], compute, family: str) -> pd.DataFrame:
    """The cells a preset wrote under any of `names` in `folder`, else computed; kept in the report's records."""
    def made() -> pd.DataFrame:
        for name in names if folder else ():
            if (folder / f"{name}-cells.csv").is_file():
                return pd.read_csv(folder / f"{name}-cells.csv")
        return compute()
    return records.current().frame(f"{names[0]}-{family}", made)


def _fig3_cells(family: str, table2: pd.DataFrame, max_examples: int | None) -> pd.DataFrame:
    """Fig. 3's columns: those with the classes of a Table 2 column are that column's cells, relabelled
    (the same alignments and merges); only the others are computed."""
    same = {f3: t2 for f3, classes in FIG3_STATES.items() for t2, c in STATES.items() if c == classes}
    computed = zhang_cells(family, max_examples=max_examples,
                           states={s: c for s, c in FIG3_STATES.items() if s not in same})
    reused = table2[table2["state"].isin(same.values())].copy()
    reused["state"] = reused["state"].map({t2: f3 for f3, t2 in same.items()})
    order = {state: i for i, state in enumerate(FIG3_STATES)}
    cells = pd.concat([reused, computed], ignore_index=True)
    return cells.sort_values("state", key=lambda s: s.map(order), kind="stable", ignore_index=True)


def papers_section(entries: list[str], max_examples: int | None = None, charts: Path | None = None) -> list[str]:
    """The section's lines for each FAMILY[=DIR] asked for; Fig. 5's chart goes to `charts`/FAMILY-zhang-fig5.html."""
    lines = [HEADING, "",
             "Zhang et al.'s Table 2 and TransFusion's Table 3 / Fig. 4 in their own shape (issue #55). Zhang et al.: "
             "each fusion method on the pair as it is (w/o matching), after their matching without rescaling (weight "
             "matching with FFN permutations and rotations inside heads, QK and VO; heads in order, no residual map) "
             "and after their matching (the same with their per-head rescaling, `orthogonal+rescale`); OT-ACTS-EMD "
             "is OT fusion on activations with exact plans, OT-ACTS and OT-WTS use Sinkhorn at Imfeld et al.'s "
             "strengths; Fisher and RegMean read 64 training examples. One cell on the command line: `symalign merge "
             "A B --align weight --mlp perm --heads none --qk orthogonal --vo orthogonal --residual none --how ot-acts "
             "--ot-solver sinkhorn`. TransFusion: the family's fine-tunes carried from seed 0 into seeds 1 and 2 "
             "(`symalign transport A A_FT B --head-strategy none|brute-force|spectral|circuit --residual-per-block`, "
             "weight matching permutation-only as the paper runs it: MLP, heads and inside heads permuted, the "
             "residual per block as its eq. 12); the task "
             "is the fine-tune's, the support set the original task; Δ against θ_B's own "
             "accuracy (α = 0).", ""]
    for entry in entries:
        family, _, folder = entry.partition("=")
        folder = Path(folder) if folder else None
        zhang = _cells(folder, ("zhang-table2",), lambda family=family: zhang_cells(family, max_examples=max_examples),
                       family)
        pairs = zhang[["a", "b"]].drop_duplicates().shape[0]
        lines += [f"### Zhang et al. Table 2: matching before six fusion methods ({family})", "",
                  f"Merged accuracy on the pair's evaluation split (loss in brackets), mean ± std over {pairs} seed "
                  f"pairs (`symalign sweep --preset zhang-table2 --family {family}`).", "",
                  zhang_text(zhang_summary(zhang), zhang, markdown=True), ""]
        fig3 = _cells(folder, ("zhang-fig3",), lambda family=family, zhang=zhang: _fig3_cells(family, zhang,
                                                                                               max_examples), family)
        lines += [f"#### Zhang et al. Fig. 3: their matching without ATTN, FFN or rescaling ({family})", "",
                  zhang_text(zhang_summary(fig3), fig3, markdown=True, preset="zhang-fig3"), ""]
        fig4 = _cells(folder, ("zhang-fig4",), lambda family=family: zf.fig4_cells(family), family)
        lines += [f"#### Zhang et al. Fig. 4: whole-model distance after each matching ({family})", "",
                  zf.fig4_text(zf.fig4_summary(fig4), fig4, markdown=True), ""]
        curves = records.current().data(f"zhang-fig5-{family}", lambda family=family: zf.fig5_curves(
            family, max_examples=max_examples))
        lines += [f"#### Zhang et al. Fig. 5: the path A → T(B) by which parts are matched ({family})", "",
                  "\n".join(f"- {line}" for line in zf.fig5_text(curves).split("\n"))]
        if charts is not None:
            zf.fig5_figure(curves, family).write_html(charts / f"{family}-zhang-fig5.html", include_plotlyjs="cdn")
            lines += ["", f"([chart](results/{family}-zhang-fig5.html): loss and accuracy along the path, mean ± std "
                      "over the pairs)"]
        lines += [""]
        if family not in tf.TRANSPORT_PAIRS:
            lines += [f"TransFusion's tables: {family} has no fine-tunes in the zoo.", ""]
            continue
        transports = _cells(folder, ("transfusion-table3", "transfusion-fig4"),
                            lambda family=family: tf.transfusion_cells(family, max_examples=max_examples), family)
        n = transports[["a_ft", "b"]].drop_duplicates().shape[0]
        lines += [f"### TransFusion Table 3 and Fig. 4: head strategies for task-vector transport ({family})", "",
                  f"Mean ± std over {n} (fine-tune, receiver) combinations (`symalign sweep --preset "
                  f"transfusion-table3 --family {family}`).", "",
                  tf.table3_text(tf.table3_summary(transports), transports, markdown=True), "",
                  "Fig. 4 (mean over the combinations; task and support accuracy against α, θ_B + α·τ without π "
                  "against θ_B + α·π(τ); `--preset transfusion-fig4` prints the same transports):", "",
                  tf.fig4_text(tf.fig4_summary(transports), transports, markdown=True), ""]
    return lines
