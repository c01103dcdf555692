"""The papers' tables run on the zoo as recorded `paper` runs (the Ablations page's "papers' tables",
`symalign paper TABLE --run`): one runner per table, each the same computation `symalign sweep --preset`
does, returning the markdown a reader sees: our rows beside the paper's printed values, the setting's
difference in one line, and each claim's verdict."""

from __future__ import annotations

from collections.abc import Callable

from symalign.errors import SymalignError
from symalign.papers import TABLES, paper_table
from symalign.papers.table import verdict
from symalign.progress import PhaseProgress
from symalign.runs.recording import recorded
from symalign.runs.settings import PaperSettings
from symalign.runs.store import RunStore

Runner = Callable[[str, int | None, PhaseProgress | None, RunStore | None], str]


def _rows(progress: PhaseProgress | None, phase: str, label: Callable[[dict], str]):
    """A preset's (done, total, row) progress as a phase progress, each cell named."""
    if progress is None:
        return None
    return lambda done, total, row: progress(phase, done, total, label(row))


def _transfusion(preset: str) -> Runner:
    def run(family: str, max_examples: int | None, progress: PhaseProgress | None, store: RunStore | None) -> str:
        from symalign.sweeps import transfusion as tf

        view = tf.preset_view(preset)
        cells = tf.transfusion_cells(family, max_examples=max_examples, alphas=view.alphas,
                                     progress=_rows(progress, "transports", lambda r: f"{r['strategy']}"))
        return view.text(view.summary(cells), cells, markdown=True)
    return run


def _zhang(preset: str) -> Runner:
    def run(family: str, max_examples: int | None, progress: PhaseProgress | None, store: RunStore | None) -> str:
        from symalign.sweeps.zhang import PRESET_STATES, zhang_cells, zhang_summary, zhang_text

        cells = zhang_cells(family, max_examples=max_examples, states=PRESET_STATES[preset],
                            progress=_rows(progress, "merges", lambda r: f"{r['fusion']}, {r['state']}"))
        return zhang_text(zhang_summary(cells), cells, markdown=True, preset=preset)
    return run


def _verma(preset: str) -> Runner:
    def run(family: str, max_examples: int | None, progress: PhaseProgress | None, store: RunStore | None) -> str:
        from symalign.sweeps.verma import verma_cells, verma_summary, verma_text

        cells = verma_cells(preset, family, max_examples=max_examples,
                            progress=_rows(progress, "rows × pairs", lambda r: r["row"]))
        return verma_text(preset, verma_summary(cells), cells, markdown=True)
    return run


def _theus_table1(family: str, max_examples: int | None, progress: PhaseProgress | None,
                  store: RunStore | None) -> str:
    """Table 1's rows on the family's three pairs (cells reused from the history), beside the paper's column,
    and its two claims decided per pair."""
    from symalign.sweeps.grid import preset_grid
    from symalign.sweeps.sweep import run_sweep

    grid = preset_grid("table1", family)
    grid.max_examples = max_examples
    result = run_sweep(grid, executor="serial", store=store, source="app",
                       progress=_rows(progress, "cells", lambda r: r["row"]))
    from symalign.papers.theus import ZOO_DATASET
    from symalign.papers.theus import ZOO_ROWS as paper

    table = TABLES["theus-table1"]
    column = ZOO_DATASET.get(family)
    lines = [f"| row | zoo ({family}): barrier, mean ± std | Theus et al. ({column or 'no matching column'}) |",
             "|---|---|---|"]
    for _, r in result.summary.iterrows():
        cell = (f"{table.value(paper[r['row']], column):.2f} ± {table.value(paper[r['row']], column + ' ±'):.2f}"
                if column and r["row"] in paper else "–")
        lines.append(f"| {r['row']} | {r['mean']:.3f} ± {r['std']:.3f} | {cell} |")
    by = result.cells.groupby(["row", "a", "b"])["barrier"].mean()
    pairs = sorted({(a, b) for _, a, b in by.index})

    def name(a: str, b: str) -> str:
        return f"{a.rsplit('/', 1)[-1]} ↔ {b.rsplit('/', 1)[-1]}"

    learned = {name(a, b): by[("weight (all)", a, b)] - by[("learned (all)", a, b)] for a, b in pairs}
    orthogonal = {name(a, b): by[("weight (all-perm)", a, b)] - by[("weight (all)", a, b)] for a, b in pairs}
    lines += ["", f"({table.zoo})", "",
              f"- \"{table.claims[0].quote}\": weight (all) − learned (all), per pair: " + verdict(learned, digits=3),
              f"- \"{table.claims[1].quote}\": weight (all-perm) − weight (all), per pair: "
              + verdict(orthogonal, digits=3)]
    return "\n".join(lines)


RUNNERS: dict[str, Runner] = {
    "theus-table1": _theus_table1,
    "zhang-table2": _zhang("zhang-table2"), "zhang-fig3": _zhang("zhang-fig3"),
    "verma-table1": _verma("verma-heads"), "verma-table2": _verma("verma-residual"),
    "verma-fig3": _verma("verma-components"),
    "transfusion-table3": _transfusion("transfusion-table3"), "transfusion-fig4": _transfusion("transfusion-fig4"),
}
# The zoo families each table runs on (the first is the page's default).
FAMILIES: dict[str, tuple[str, ...]] = {
    "theus-table1": ("vit-digits", "gpt-shakespeare"), "zhang-table2": ("vit-digits",), "zhang-fig3": ("vit-digits",),
    "verma-table1": ("bert-shakespeare",), "verma-table2": ("bert-shakespeare",),
    "verma-fig3": ("bert-shakespeare",),
    "transfusion-table3": ("vit-digits", "gpt-shakespeare"), "transfusion-fig4": ("vit-digits", "gpt-shakespeare"),
}


def check_family(key: str, family: str) -> None:
    """One line for a family the table does not run on (the CLI calls it before it opens the run history)."""
    if family not in FAMILIES[key]:
        raise SymalignError(f"{key} runs on {', '.join(FAMILIES[key])}; got {family!r}")


def paper_table_run(key: str, family: str, max_examples: int | None = None, store: RunStore | None = None,
                    source: str = "api", progress: PhaseProgress | None = None) -> str | None:
    """Run one paper table on a zoo family and record it: the run's metrics hold the markdown and the
    paper's own table (so a reader sees both without the registry)."""
    table = paper_table(key)
    check_family(key, family)
    settings = PaperSettings(key, family, max_examples)
    with recorded(store, "paper", f"zoo:{family}/0", f"zoo:{family}/1", key, settings, source,
                  f"{table.paper}, {table.name} on {family}") as run:
        text = RUNNERS[key](family, max_examples, progress, store)
        run.finish({"text": text, "paper_table": table.markdown(), "table": key, "family": family})
    return run.id


def latest_paper_run(store: RunStore, key: str, family: str):
    """The newest finished run of this table on this family, if any."""
    return next((r for r in store.list(kind="paper", state="done")
                 if r.settings.get("table") == key and r.settings.get("family") == family), None)
