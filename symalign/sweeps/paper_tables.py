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
                                     strategies=view.strategies, shots=view.shots,
                                     progress=_rows(progress, "transports", lambda r: f"{r['strategy']}"))
        return view.text(view.summary(cells), cells, markdown=True)
    return run


def _zhang(preset: str) -> Runner:
    def run(family: str, max_examples: int | None, progress: PhaseProgress | None, store: RunStore | None) -> str:
        from symalign.sweeps.zhang import zhang_cells, zhang_summary, zhang_text

        cells = zhang_cells(family, max_examples=max_examples, preset=preset,
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
    result = _swept("table1", family, max_examples, progress, store)
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
    learned = per_pair(result.cells, lambda m: m["weight (all)"] - m["learned (all)"])
    orthogonal = per_pair(result.cells, lambda m: m["weight (all-perm)"] - m["weight (all)"])
    lines += ["", f"({table.zoo})", "",
              f"- \"{table.claims[0].quote}\": weight (all) − learned (all), per pair: " + verdict(learned, digits=3),
              f"- \"{table.claims[1].quote}\": weight (all-perm) − weight (all), per pair: "
              + verdict(orthogonal, digits=3)]
    return "\n".join(lines)


def per_pair(cells, margin: Callable[[dict[str, float]], float]) -> dict[str, float]:
    """Per seed pair, `margin` of the rows' barriers there (matcher seeds averaged), named "0 ↔ 1"."""
    by = cells.groupby(["a", "b", "row"], sort=False)["barrier"].mean()
    return {f"{a.rsplit('/', 1)[-1]} ↔ {b.rsplit('/', 1)[-1]}": float(margin(group.droplevel([0, 1]).to_dict()))
            for (a, b), group in by.groupby(level=[0, 1], sort=False)}


def _swept(preset: str, family: str, max_examples: int | None, progress: PhaseProgress | None,
           store: RunStore | None):
    """A preset's grid on the family's seed pairs (cells reused from the history), as the Ablations grid runs it."""
    from symalign.sweeps.grid import preset_grid
    from symalign.sweeps.sweep import run_sweep

    grid = preset_grid(preset, family)
    grid.max_examples = max_examples
    return run_sweep(grid, executor="serial", store=store, source="app",
                     progress=_rows(progress, "cells", lambda r: r["row"]))


def _barrier_rows(result, family: str) -> list[str]:
    lines = [f"| row | zoo ({family}): barrier, mean ± std | ± SE (n) |", "|---|---|---|"]
    for _, r in result.summary.iterrows():
        lines.append(f"| {r['row']} | {r['mean']:.3f} ± {r['std']:.3f} | ± {r['sem']:.3f} ({r['n']}) |")
    return lines


# Theus et al.'s figures: per claim, what is compared on each pair (a margin of the rows' barriers, positive where
# the claim holds) and how it is said.
THEUS_FIGURES: dict[str, tuple[str, tuple[tuple[str, Callable[[dict[str, float]], float]], ...]]] = {
    "theus-fig5": ("lambda-sampling", (
        ("min(λ uniform, λ normal) − λ uniform_mid",
         lambda m: min(m["learned (all), λ uniform"], m["learned (all), λ normal"])
         - m["learned (all), λ uniform_mid"]),)),
    "theus-fig6": ("wm-iterations", (
        ("weight (all): 1 sweep − 5 sweeps", lambda m: m["weight (all), 1 sweep"] - m["weight (all), 5 sweeps"]),
        ("weight (all)'s fall from 1 to 5 sweeps − weight (all-perm)'s",
         lambda m: (m["weight (all), 1 sweep"] - m["weight (all), 5 sweeps"])
         - (m["weight (all-perm), 1 sweep"] - m["weight (all-perm), 5 sweeps"])))),
}


def _theus_figure(key: str) -> Runner:
    def run(family: str, max_examples: int | None, progress: PhaseProgress | None, store: RunStore | None) -> str:
        preset, claims = THEUS_FIGURES[key]
        table = TABLES[key]
        result = _swept(preset, family, max_examples, progress, store)
        lines = _barrier_rows(result, family) + ["", f"({table.zoo})", ""]
        for claim, (said, margin) in zip(table.claims, claims):
            lines.append(f"- \"{claim.quote}\": {said}, per pair: "
                         + verdict(per_pair(result.cells, margin), digits=3))
        return "\n".join(lines)
    return run


def _zhang_figure(key: str) -> Runner:
    def run(family: str, max_examples: int | None, progress: PhaseProgress | None, store: RunStore | None) -> str:
        from symalign.sweeps import zhang_figures as zf

        rows = _rows(progress, "rows × pairs", lambda r: r["row"])
        if key == "zhang-fig4":
            cells = zf.fig4_cells(family, progress=rows)
            return zf.fig4_text(zf.fig4_summary(cells), cells, markdown=True)
        curves = zf.fig5_curves(family, max_examples=max_examples, progress=rows)
        return "\n".join(f"- {line}" for line in zf.fig5_text(curves).split("\n"))
    return run


def _transfusion_fig5(family: str, max_examples: int | None, progress: PhaseProgress | None,
                      store: RunStore | None) -> str:
    from symalign.sweeps import transfusion_fig5 as f5

    curves = f5.fig5_curves(family, max_examples=max_examples, progress=_rows(progress, "rows × pairs",
                                                                              lambda r: r["row"]))
    return f5.fig5_text(curves)


RUNNERS: dict[str, Runner] = {
    "theus-table1": _theus_table1, "theus-fig5": _theus_figure("theus-fig5"), "theus-fig6": _theus_figure("theus-fig6"),
    "zhang-table1": _zhang("zhang-table1"), "zhang-table2": _zhang("zhang-table2"), "zhang-fig3": _zhang("zhang-fig3"),
    "zhang-fig4": _zhang_figure("zhang-fig4"), "zhang-fig5": _zhang_figure("zhang-fig5"),
    "zhang-fig6": _zhang("zhang-fig6"),
    "verma-table1": _verma("verma-heads"), "verma-table2": _verma("verma-residual"),
    "verma-table3": _verma("verma-classifiers"), "verma-fig3": _verma("verma-components"),
    "transfusion-table1": _transfusion("transfusion-table1"), "transfusion-table2": _transfusion("transfusion-table2"),
    "transfusion-table3": _transfusion("transfusion-table3"), "transfusion-table4": _transfusion("transfusion-table4"),
    "transfusion-fig4": _transfusion("transfusion-fig4"), "transfusion-fig5": _transfusion_fig5,
}
# The zoo families each table runs on (the first is the page's default).
FAMILIES: dict[str, tuple[str, ...]] = {
    "theus-table1": ("vit-digits", "gpt-shakespeare"), "theus-fig5": ("vit-digits", "gpt-shakespeare"),
    "theus-fig6": ("vit-digits", "gpt-shakespeare"),
    "zhang-table1": ("bert-shakespeare-genre",), "zhang-table2": ("vit-digits",), "zhang-fig3": ("vit-digits",),
    "zhang-fig4": ("vit-digits",),
    "zhang-fig5": ("vit-digits",), "zhang-fig6": ("bert-shakespeare-genre",),
    "verma-table1": ("bert-shakespeare",), "verma-table2": ("bert-shakespeare",),
    "verma-table3": ("bert-shakespeare-genre",), "verma-fig3": ("bert-shakespeare",),
    "transfusion-table1": ("vit-digits", "gpt-shakespeare"), "transfusion-table2": ("bert-shakespeare",),
    "transfusion-table3": ("vit-digits", "gpt-shakespeare"), "transfusion-table4": ("vit-digits",),
    "transfusion-fig4": ("vit-digits", "gpt-shakespeare"),
    "transfusion-fig5": ("vit-digits", "gpt-shakespeare"),
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


def coverage_markdown() -> str:
    """Which of the papers' tables and figures symalign runs, and how: every registered one as a zoo stand-in
    (none in the paper's own models and data), then those not covered and why. The app, README and
    docs/papers.md show this one table."""
    from symalign.papers import NOT_COVERED

    lines = ["| paper | table or figure | in symalign | what differs, or why not |", "|---|---|---|---|"]
    for key, table in TABLES.items():
        lines.append(f"| {table.paper} | {table.name} | stand-in on the zoo: `symalign paper {key} --run` "
                     f"({', '.join(FAMILIES[key])}) | {table.zoo} |")
    lines += [f"| {paper} | {name} | not covered | {why} |" for paper, name, why in NOT_COVERED]
    return "\n".join(lines)


def coverage_sentence() -> str:
    """The coverage in a few lines (the README's): how many tables run, on stand-ins, and which are not covered."""
    from symalign.papers import NOT_COVERED

    by_paper: dict[str, list[str]] = {}
    for paper, name, _ in NOT_COVERED:
        by_paper.setdefault(paper.split(" (")[0], []).append(name)
    missing = "; ".join(f"{paper} {', '.join(names)}" for paper, names in by_paper.items())
    return (f"{len(TABLES)} tables and figures run, every one on zoo stand-ins (smaller models, other data; none in "
            f"the paper's own models and data): {', '.join(f'`{k}`' for k in TABLES)}. Not covered: {missing} "
            "(docs/papers.md says why, and what differs for each one that runs).")
