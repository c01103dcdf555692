"""Regenerate docs/results.md: the zoo's barriers next to the papers' claims, from sweeps.

    python -m research.docgen.results_report [--families vit-digits gpt-shakespeare] [--executor auto]
                                        [--ablations lambda-sampling layer-subsets ...]
                                        [--widths vit-digits gpt-shakespeare] [--anatomy] [--only-sections]
                                        [--field vit-digits gpt-shakespeare]
                                        [--out docs/results.md] [--points N --max-examples N --steps N]

Runs the `table1` and `components` sweeps for each family (cells already in the run history are
reused, so a second run takes seconds), then writes the report: mean ± std over the three seed
pairs per row, Theus et al.'s Table 1 beside it, one paragraph per claim saying whether the zoo
agrees (decided from the numbers, not written by hand), and an HTML bar chart per family.
`--ablations` adds a section per named one-option preset (symalign.sweeps.grid.PRESETS: λ sampling,
weight-matching sweeps, head and residual strategies, data amount, learned start, layer subsets):
its table (loss barrier mean ± std and ± standard error with n, accuracy barrier) and a chart
with mean ± std bars; a preset already swept (`symalign sweep --preset NAME --family RECIPE`)
is read from the run history. `--widths FAMILY ...` adds the barrier against width (the `width`
preset on the width family, symalign.train.recipes.WIDTHS) with the literature's claim; with
`--only-sections` only the sections asked for are rewritten in the existing report. `--anatomy`
adds where the barrier lives (research/docgen/anatomy_section.py). `--field FAMILY ...` adds the field side by
side (research/docgen/field_section.py: the `peers` merged-model table per family, every row of Theus et
al.'s Table 1 for every data set, the other papers' tables beside the zoo).

`--points`, `--max-examples` and `--steps` shrink the sweeps (and the anatomy's paths and runs) for a
quick check that the report regenerates (the test suite does this); such a report says so at its top
and is not the one to quote."""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import plotly.graph_objects as go
import torch

from research.docgen import records
from research.docgen.ablation_section import ablation_section, fmt, path_curves, sem
from research.docgen.anatomy_section import anatomy_section
from research.docgen.curves_section import curves_section
from research.docgen.field_section import field_section
from research.docgen.papers_section import papers_section
from research.docgen.verma_section import verma_section
from symalign.papers.table import verdict as verdict_of
from symalign.papers.theus import TABLE1 as THEUS
from symalign.papers.theus import ZOO_ROWS
from symalign.runs import RunStore
from symalign.sweeps import PRESETS, preset_grid, run_sweep
from symalign.sweeps.sweep import summary_frame

MAIN_PRESETS = ("table1", "components", "quick", "width")  # the report's own tables (and the first look)

# Theus et al., Table 1 (ViT on CIFAR-10, GPT-2 on Tiny Shakespeare): the rows they report.
# Theus et al. Table 1 (CIFAR-10, Tiny Shakespeare) from the papers' registry, under the zoo's row names
PAPER = {row: (THEUS.value(paper_row, "CIFAR-10"), THEUS.value(paper_row, "Tiny Shakespeare"))
         for row, paper_row in ZOO_ROWS.items()}
PAPER_PM = {row: (THEUS.value(paper_row, "CIFAR-10 ±"), THEUS.value(paper_row, "Tiny Shakespeare ±"))
            for row, paper_row in ZOO_ROWS.items()}
WIDTH_HEADING = "## The barrier against width"
PAPER_COLUMN = {"vit-digits": 0, "gpt-shakespeare": 1}
PAPER_SETTING = {"vit-digits": "ViT, CIFAR-10", "gpt-shakespeare": "GPT-2, Tiny Shakespeare"}

def pair_exceptions(cells, order: list[str]) -> list[str]:
    """Seed pairs on which the ordering `order` (each row above the next) breaks, with the broken steps."""
    out = []
    for (a, b), group in cells[cells["row"].isin(order)].groupby(["a", "b"], sort=False):
        m = group.groupby("row")["barrier"].mean()
        broken = [f"{x} {m[x]:.2f} ≤ {y} {m[y]:.2f}" for x, y in zip(order, order[1:]) if x in m and y in m
                  and m[x] <= m[y]]
        if broken:
            out.append(f"{a.rsplit('/', 1)[-1]} ↔ {b.rsplit('/', 1)[-1]}: {', '.join(broken)}")
    return out


def per_pair_value(cells, row: str, margin) -> dict[str, float]:
    """Per seed pair, `margin` of row `row`'s barrier (matcher seeds averaged)."""
    means = cells.groupby(["row", "a", "b"], sort=False)["barrier"].mean()
    return {f"{a.rsplit('/', 1)[-1]} ↔ {b.rsplit('/', 1)[-1]}": float(margin(means[(name, a, b)]))
            for (name, a, b) in means.index if name == row}


def per_pair(cells, higher: str, lower: str) -> dict[str, float]:
    """Per seed pair, row `higher`'s barrier minus row `lower`'s (matcher seeds averaged)."""
    means = cells.groupby(["row", "a", "b"], sort=False)["barrier"].mean()
    return {f"{a.rsplit('/', 1)[-1]} ↔ {b.rsplit('/', 1)[-1]}": float(means[(higher, a, b)] - means[(lower, a, b)])
            for (row, a, b) in means.index if row == higher and (lower, a, b) in means.index}


def claims(family: str, table: dict, components: dict, cells=None, component_cells=None) -> list[str]:
    """One paragraph per claim, each decided per seed pair by the one verdict rule (symalign.papers.table) where
    the cells are given; a mean alone decides nothing."""
    m = {name: row["mean"] for name, row in table.items()}
    out = []
    learned, weight = m["learned (all)"], m["weight (all)"]
    closes = ("per seed pair, 0.05 − learned (all) (the registry's threshold: at most 0.05 on every pair): "
              + verdict_of(per_pair_value(cells, "learned (all)", lambda b: 0.05 - b), digits=3)
              if cells is not None else "not decided (no per-pair cells)")
    out.append(f"**Learned matching closes the barrier (Theus et al.).** Learned matching with all classes leaves "
               f"{fmt(table['learned (all)'])}, against {fmt(table['weight (all)'])} for weight matching and "
               f"{fmt(table['vanilla'])} without alignment; {closes}.")
    order = ["vanilla", "activation (all)", "weight (all)", "learned (all)"]
    held = [f"{a} > {b}" for a, b in zip(order, order[1:]) if m[a] > m[b]]
    broken = [f"{a} ≤ {b}" for a, b in zip(order, order[1:]) if m[a] <= m[b]]
    exceptions = pair_exceptions(cells, order) if cells is not None else []
    out.append(f"**The ordering vanilla > activation > weight > learned (Theus et al., Table 1, "
               f"{PAPER_SETTING.get(family, 'their setting')}).** "
               + ("On the means it holds" if not broken else
                  f"On the means it holds only in part: {', '.join(held) or 'none of the steps'} hold(s), but "
                  f"{', '.join(broken)}")
               + (f". Per seed pair it breaks on {len(exceptions)}: " + "; ".join(exceptions) + "." if exceptions
                  else ", and on every seed pair." if cells is not None else "."))
    perms_w, perms_l = m["weight (all-perm)"], m["learned (all-perm)"]  # the paper's permutation-only setting
    if cells is not None:  # per seed pair, by the one verdict rule (symalign.papers.table)
        verdict = "; ".join(f"{matcher}: " + verdict_of(per_pair(cells, f"{matcher} (all-perm)", f"{matcher} (all)"))
                            for matcher in ("weight", "learned"))
    else:
        both = weight < perms_w and learned < perms_l
        verdict = ("agrees for both matchers" if both else "agrees only in part"
                   if weight < perms_w or learned < perms_l else "does not agree")
    no_residual = components.get("all but residual", {}).get("mean")
    share = ("" if no_residual is None or perms_w <= weight else
             f" Most of weight matching's gain is the residual's orthogonal map (Theus et al.'s addition): without it "
             f"(every other class kept, within-head rotations included) the barrier is {no_residual:.2f}, so the "
             f"residual map accounts for {min(1.0, max(0.0, (no_residual - weight) / (perms_w - weight))):.0%} of "
             f"the {perms_w - weight:.2f} between permutations and all classes. Zhang et al.'s rotations are "
             "within heads (QK, VO) with no residual map; docs/zoo.md has that row.")
    out.append("**Rotations beat permutations alone (Theus et al., App. B.2 / Fig. 6 for weight matching: \"for "
               "orthogonal matching, the loss barrier steadily decreases [...] permutation-based matching shows no "
               "significant improvement across iterations\"; Table 1's \"Learned matching (permutation only)\" row "
               "for learned).** "
               f"Weight matching: {perms_w:.2f} with permutations in place of every orthogonal map (all-perm: the "
               f"residual stream and the features inside heads permuted too, the paper's setting), {weight:.2f} with "
               f"the orthogonal classes; learned: {perms_l:.2f} and {learned:.2f}. Per seed pair (all-perm − all): "
               f"{verdict}.{share} "
               f"(weight (permutations), MLP units and heads only, is {m['weight (permutations)']:.2f}: "
               "symalign's narrower set, not the paper's row.)")
    rises = {name.removeprefix("all but "): row["mean"] - components["all classes"]["mean"]
             for name, row in components.items() if name.startswith("all but ")}
    top = max(rises, key=rises.get)
    out.append("**Which symmetry matters most (the per-component ablation of the barrier; Zhang et al. Fig. 3 reports "
               "merged accuracy without ATTN, FFN or rescaling: a different measure, not comparable).** Switching one "
               f"component kind off in weight matching (all classes: {components['all classes']['mean']:.2f}) raises "
               "the barrier by " + ", ".join(f"{k} {v:+.2f}" for k, v in sorted(rises.items(), key=lambda kv: -kv[1]))
               + f". The largest rise comes from {top}"
               + (": the residual basis is the lever here, as the zoo's calibration found." if top == "residual" else
                  f": {top} matters more here than the residual (residual {rises['residual']:+.2f}).")
               + " (Verma & Elbayad's Table 2 is a different question, residual permutations alone on post-LN "
               "masked LMs: see the Verma section, in their setting.)")
    rescaled_name = next((name for name in components if "rescaling" in name), None)
    if rescaled_name is not None:
        plain, rescaled = components["all classes"], components[rescaled_name]
        helps = ("per seed pair (all classes − with rescaling): "
                 + verdict_of(per_pair(component_cells, "all classes", rescaled_name), digits=3)
                 if component_cells is not None else "not decided (no per-pair cells)")
        out.append("**Rescaling on top of rotations (Zhang et al., §4: their per-head rescaling; they report merged "
                   "accuracy, this is the barrier).** Weight matching with the QK and VO rotations "
                   f"alone leaves {fmt(plain)}; with their per-head rescaling added {fmt(rescaled)}. That rescaling "
                   f"helps, {helps}.")
    return out


def chart(family: str, table: dict, path: Path) -> None:
    names = list(table)
    fig = go.Figure(go.Bar(x=names, y=[table[n]["mean"] for n in names],
                           error_y={"type": "data", "array": [table[n]["std"] for n in names]}, name="zoo"))
    paper = [PAPER[n][PAPER_COLUMN[family]] if n in PAPER else None for n in names]
    fig.add_trace(go.Scatter(x=names, y=paper, mode="markers", marker={"symbol": "diamond", "size": 11},
                             name=f"Theus et al. ({PAPER_SETTING[family]})"))
    fig.update_layout(title=f"{family}: barrier, mean ± std over three seed pairs", yaxis_title="loss barrier")
    fig.write_html(path, include_plotlyjs="cdn")


def width_section(families: list[str], overrides: dict, executor: str, store: RunStore, folder: Path) -> list[str]:
    """The barrier against width (`width` preset) for each family: a table, a chart and the literature's claim."""
    from symalign.plots.interpolation import width_figure
    from symalign.sweeps.widths import width_claim, width_table, width_text

    lines = [WIDTH_HEADING, "", "Seeds 0 ↔ 1 of each family at each width (`symalign sweep --preset width --family "
             "RECIPE`; the recipes are the zoo's with only the width changed, the MLP kept in ratio). The share "
             "closed is of the same width's vanilla barrier.", ""]
    for family in families:
        cells = swept("width", family, overrides, executor, store, cells=True)
        table = width_table(cells)
        chart_path = folder / f"{family}-width.html"
        width_figure(table.to_dict(orient="records"), dict(zip(cells["row"], cells["method"])),
                     f"{family}: the barrier against width").write_html(chart_path, include_plotlyjs="cdn")
        lines += [f"### {family} ([chart](results/{chart_path.name}))", "", width_text(table, 3, markdown=True), "",
                  width_claim(table), ""]
    return lines


def swept(preset: str, family: str, overrides: dict, executor: str, store: RunStore, cells: bool = False):
    """The preset's summary records (its cells' frame with `cells`): the cells from the report's records, else
    from the run history where it has them, else run (symalign.sweeps.run_sweep)."""
    grid = preset_grid(preset, family)
    for key, value in overrides.items():
        if key == "max_sweeps":
            grid.capped(value)
        else:
            setattr(grid, key, value)
    grid.check_options("results_report.py")

    def compute():
        return run_sweep(grid, executor=executor, store=store,
                         progress=lambda d, t, r: print(f"[{d}/{t}] {r['row']} {r['a']} ↔ {r['b']}: "
                                                       f"{r['barrier']:.4f}", flush=True)).cells

    frame = records.current().frame(f"sweep-{family}-{preset}", compute)
    return frame if cells else summary_frame(frame, grid).to_dict(orient="records")


def with_section(report: str, section: str) -> str:
    """The report with the section of `section`'s heading (its first line) replaced by it (appended when
    the report has none)."""
    heading = section.split("\n", 1)[0]
    start = report.find(heading)
    if start < 0:
        return report.rstrip("\n") + "\n\n" + section
    end = report.find("\n## ", start + len(heading))
    return report[:start] + section + (report[end:] if end >= 0 else "")


def family_section(family: str, args, overrides: dict, store: RunStore, folder: Path) -> str:
    """One family's tables (Table 1 rows beside Theus et al.'s, the per-component ablation), its claims and
    the ablation sections asked for."""
    tables = {}
    for preset in ("table1", "components"):
        tables[preset] = {row["row"]: row for row in swept(preset, family, overrides, args.executor, store)}
    table1_cells = swept("table1", family, overrides, args.executor, store, cells=True)  # reused: per pair
    component_cells = swept("components", family, overrides, args.executor, store, cells=True)
    table, components = tables["table1"], tables["components"]
    chart(family, table, folder / f"{family}.html")
    col = PAPER_COLUMN.get(family)
    lines = [f"## {family}", "", f"Barrier on the evaluation split, mean ± std over the seed pairs 0↔1, 0↔2, "
             f"1↔2; Theus et al. report {PAPER_SETTING.get(family, 'another setting')} "
             f"([chart](results/{family}.html)).", "",
             "| row | zoo | Theus et al. | ± SE (n) |", "|---|---|---|---|"]
    for name, row in table.items():
        paper = (f"{PAPER[name][col]:.2f} ± {PAPER_PM[name][col]:.2f}" if name in PAPER and col is not None
                 else "–")
        lines.append(f"| {name} | {fmt(row)} | {paper} | {sem(row)} |")
    lines += ["", "Per-component ablation (weight matching):", "", "| row | barrier | ± SE (n) |", "|---|---|---|"]
    lines += [f"| {name} | {fmt(row)} | {sem(row)} |" for name, row in components.items()]
    lines += [""] + [p + "\n" for p in claims(family, table, components, table1_cells, component_cells)]
    for entry in args.ablations:
        only, _, preset = entry.rpartition(":")
        if only and only != family:
            continue
        lines += ablation_section(family, preset, swept(preset, family, overrides, args.executor, store),
                                  folder, swept(preset, family, overrides, args.executor, store, cells=True))
        if preset == "lambda-sampling":  # Theus et al. Fig. 5: the curves themselves, not only their maxima
            lines += path_curves(family, swept(preset, family, overrides, args.executor, store, cells=True),
                                 store, folder)
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--families", nargs="*", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--executor", default="auto")
    parser.add_argument("--ablations", nargs="*", default=[], metavar="[FAMILY:]PRESET",
                        help="one-option presets to add a section for (FAMILY:PRESET: for that family only)")
    parser.add_argument("--widths", nargs="*", default=[], metavar="FAMILY",
                        help="add the barrier against width for these families (vit-digits, gpt-shakespeare)")
    parser.add_argument("--anatomy", action="store_true",
                        help="add where the barrier lives (attribution, correlations, swaps, the soft path unrounded)")
    parser.add_argument("--field", nargs="*", default=[], metavar="FAMILY[=DIR]",
                        help="add the field side by side: merged models by every peer method, Theus et al.'s full "
                             "Table 1, the other papers' tables (FAMILY=DIR: read the peers cells that "
                             "`symalign sweep --preset peers --family FAMILY --out DIR` wrote instead of recomputing)")
    parser.add_argument("--curves", nargs="*", default=[], metavar="FAMILY[=DIR]",
                        help="add beyond the straight line: the curves preset's table and the plane per family "
                             "(FAMILY=DIR: read `symalign sweep --preset curves --out DIR`'s cells)")
    parser.add_argument("--papers", nargs="*", default=[], metavar="FAMILY[=DIR]",
                        help="add the merging and transport papers' own tables (Zhang et al. Table 2, TransFusion "
                             "Table 3 and Fig. 4; FAMILY=DIR: read the presets' cells from DIR)")
    parser.add_argument("--verma", action="store_true",
                        help="add Verma & Elbayad's masked-LM tables in their setting (the verma-* presets)")
    parser.add_argument("--only-sections", action="store_true",
                        help="rewrite only the sections asked for (--widths, --anatomy, --field, --papers, --curves, "
                             "--verma) "
                             "in the existing report")
    parser.add_argument("--out", default="docs/results.md")
    parser.add_argument("--from-records", action="store_true",
                        help="render the page from the committed records alone (docs/results/records/, or --records), "
                             "with the command they were computed by; runs no model and writes no chart")
    parser.add_argument("--records", default=None,
                        help="the records folder (default: results/records beside --out when computing, "
                             "docs/results/records with --from-records)")
    parser.add_argument("--points", type=int, help="λ points per curve (default: the sweep's, 21)")
    parser.add_argument("--max-examples", type=int, help="evaluation examples per curve (default: all)")
    parser.add_argument("--steps", type=int, help="learned matching steps (default: the data's)")
    parser.add_argument("--max-sweeps", type=int, help="weight matching's sweeps where a row sets none (a quick check; "
                                                        "default: to convergence)")
    return parser


def main(argv: list[str] | None = None) -> None:
    import sys
    import tempfile

    parser = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.from_records:  # the recorded command's sections, rendered from its records into --out
        folder = Path(args.records) if args.records else records.FOLDER
        store = records.Records(folder, read_only=True)
        recorded = store.data("command", lambda: None)
        args = parser.parse_args([*recorded, "--out", args.out])
        records.use(store)
        with tempfile.TemporaryDirectory() as charts:  # charts are the computing run's; not rewritten here
            return _write(args, parser, Path(charts))
    out = Path(args.out)
    folder = Path(args.records) if args.records else out.parent / "results" / "records"
    store = records.Records(folder)
    kept = [a for a in argv if a not in ("--from-records",)]
    skip = {"--out", "--records"}
    recorded = [a for i, a in enumerate(kept) if a not in skip and (i == 0 or kept[i - 1] not in skip)]
    (folder / "command.json").unlink(missing_ok=True)
    store.data("command", lambda: recorded)
    records.use(store)
    (out.parent / "results").mkdir(parents=True, exist_ok=True)
    return _write(args, parser, out.parent / "results")


def _write(args, parser, charts: Path) -> None:
    """Compute (or read from the records) and write the report's sections; `charts` gets the HTML charts."""
    ablations = [p for p in PRESETS if p not in MAIN_PRESETS]
    for entry in args.ablations:
        if entry.rpartition(":")[2] not in ablations:
            parser.error(f"--ablations {entry}: choose from {', '.join(ablations)} (optionally FAMILY:PRESET)")
    overrides = {k: v for k, v in (("points", args.points), ("max_examples", args.max_examples),
                                   ("steps", args.steps), ("max_sweeps", args.max_sweeps)) if v is not None}
    out = Path(args.out)
    runs = RunStore()
    widths = width_section(args.widths, overrides, args.executor, runs, charts) if args.widths else []
    anatomy = anatomy_section(args.steps, args.max_examples or 64, args.points) if args.anatomy else []
    curves = curves_section(args.curves, charts) if args.curves else []
    verma = verma_section(args.points, args.max_examples) if args.verma else []
    papers = papers_section(args.papers, args.max_examples, charts) if args.papers else []
    if args.only_sections:
        report = out.read_text() if out.is_file() else ""
        field = field_section(args.field, report, args.steps, args.max_examples) if args.field else []
        named = (("width", widths), ("anatomy", anatomy), ("field", field), ("papers", papers), ("curves", curves),
                 ("verma", verma))
        for _, section in named:
            report = with_section(report, "\n".join(section)) if section else report
        out.write_text(report)
        print(f"wrote the {', '.join(n for n, s in named if s)} section(s) of {out}")
        return
    sections = [family_section(family, args, overrides, runs, charts) for family in args.families]
    command = records.current().data("command", lambda: [])
    machine = records.current().data("environment", lambda: {
        "machine": platform.machine(), "torch": torch.__version__, "threads": torch.get_num_threads()})
    header = ["# Results: the zoo against the papers' claims", "",
              "Regenerated by `python -m research.docgen.results_report " + " ".join(command) + "`, which computes "
              "every section and keeps its numbers in docs/results/records/ (cells reused from the run history "
              "and the records; delete a record to recompute it); `python -m research.docgen.results_report "
              "--from-records` renders this page from those records alone, and tests/test_results_page.py checks "
              "that it does. Sweeps `table1` and `components` of each zoo family, and one section per ablation "
              "preset (docs/sweeps.md). Every number below is a mean ± std over the three seed pairs, "
              f"computed on {machine['machine']} with torch {machine['torch']} ({machine['threads']} torch "
              "threads; matching gives the same result at any thread count).", "",
              "The zoo is small (CPU-trained, minutes per model) and the papers' settings are not: the claims "
              "are about orderings and whether a barrier closes, which is what the paragraphs check.", ""]
    if overrides:
        header[2:2] = [f"**Quick check, not the numbers to quote**: sweeps shrunk to {overrides}.", ""]
    field = field_section(args.field, "\n".join(sections), args.steps, args.max_examples) if args.field else []
    out.write_text("\n".join(header + sections + ["\n".join(part) for part in (verma, widths, anatomy, field, papers,
                                                                              curves) if part]))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
