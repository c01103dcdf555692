"""`symalign sweep`: the command that runs an ablation grid (symalign.sweeps) and prints its table."""

from __future__ import annotations

import math
import sys

from symalign.cli.common import add_data_flag, add_max_examples_flag, at_least, print_json, store_for
from symalign.errors import SymalignError
from symalign.sweeps.executors import EXECUTORS


def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="an ablation grid: model pairs × methods × symmetry classes × seeds")
    p.add_argument("file", nargs="?", help="a sweep file (.toml, .yaml or .json; see docs/sweeps.md)")
    from symalign.sweeps.grid import PRESETS
    from symalign.sweeps.verma_tables import VERMA_TABLES

    p.add_argument("--preset", help=f"a named grid (docs/sweeps.md): {', '.join(PRESETS)}; or peers (merged models: "
                                    "averaging, OT fusion, weight and learned matching + averaging); or zhang-table1 "
                                    "(Simple, Fisher and RegMean merges of the genre classifiers without and with "
                                    "attention matching: Zhang et al. Table 1), zhang-table2 "
                                    "(six fusion methods without matching, after matching without rescaling, "
                                    "after matching: Zhang et al. Table 2), zhang-fig3 (w/o ATTN, FFN, rescaling), "
                                    "zhang-fig4 (distances), zhang-fig5 (loss curves), zhang-fig6 (attention "
                                    "matching of one layer or the last ones, genre classifiers); or "
                                    "transfusion-table1 "
                                    "(transport by OT, Git Re-Basin and TransFusion), transfusion-table2 (the same "
                                    "for the genre classifiers' encoders, --family bert-shakespeare), "
                                    "transfusion-table4 (a per-layer α learned on 10 shots per class), "
                                    "transfusion-table3, transfusion-fig4 "
                                    "(task-vector transport by head strategy, TransFusion; "
                                    "--family vit-digits or gpt-shakespeare, --seeds: fine-tune seeds); or curves "
                                    "(the straight line, the aligned line, a fitted curve and the aligned curve); or "
                                    f"{', '.join(VERMA_TABLES)} (Verma & Elbayad's Tables 1, 2 and Fig. 3 on the "
                                    "masked-LM BERTs, Table 3 on the genre classifiers, on their loss barrier; "
                                    "--family defaults to each table's family)")
    p.add_argument("--family", help="with --preset: the zoo recipe whose seeds 0, 1, 2 make the pairs (with "
                   "--preset width: seeds 0 and 1 of the recipe at each of its widths)")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="matcher seeds for learned/soft rows")
    p.add_argument("--executor", default="auto", choices=EXECUTORS,
                   help="auto: Ray when it is installed, else serial")
    p.add_argument("--address", default=None, help="join this Ray cluster (HOST:PORT) instead of a local one")
    p.add_argument("--gpus-per-cell", type=float, default=None, metavar="G",
                   help="Ray: GPUs each cell asks for (default: 1 on a cluster with GPUs, so a 4-GPU node runs four "
                        "cells at once; 0 on a CPU cluster; 0.5 shares a GPU between two cells)")
    add_data_flag(p, "data spec for every cell (default: each model's own data)")
    p.add_argument("--points", type=at_least(2), default=None, help="interpolation points per curve (default 21)")
    add_max_examples_flag(p, "evaluation examples per curve point (default: all)")
    p.add_argument("--steps", type=at_least(1), default=None, help="learned/soft rows: most optimisation steps")
    p.add_argument("--split", default=None, choices=("eval", "train"),
                   help="measure every cell on this split (default: the file's, else eval)")
    p.add_argument("--out", default=None, help="write cells.csv, cells.parquet and summary.csv here (and widths.csv "
                   "for a sweep over a width family)")
    p.add_argument("--no-record", action="store_true",
                   help="do not record (nor reuse) runs in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> None:
    from symalign.sweeps import preset_grid, read_grid, run_sweep
    from symalign.sweeps.grid import OPTION_KEYS
    from symalign.sweeps.widths import width_table, width_text

    if bool(args.file) == bool(args.preset):
        raise SymalignError("sweep takes a sweep file or --preset NAME --family RECIPE (one of the two)")
    if args.file and args.family:
        raise SymalignError("--family goes with --preset; a sweep file names its own models")
    from symalign.sweeps.grid import PRESETS

    if args.preset and args.preset not in PRESETS and args.preset not in TABLE_PRESETS:
        raise SymalignError(f"unknown preset {args.preset!r}; choose from {', '.join(PRESETS)} (grids) or "
                            f"{', '.join(TABLE_PRESETS)} (tables)")
    if args.preset in TABLE_PRESETS:  # not an alignment grid: the preset's own table
        return TABLE_PRESETS[args.preset](args)
    grid = read_grid(args.file) if args.file else preset_grid(args.preset, args.family or "", args.seeds)
    for key in OPTION_KEYS:
        if getattr(args, key) is not None:
            setattr(grid, key, getattr(args, key))
    if args.seeds and args.file:
        grid.seeds = args.seeds

    def progress(done: int, total: int, row: dict) -> None:
        what = f"barrier {row['barrier']:.4f}" if row["error"] is None else f"failed: {row['error']}"
        how = "reused" if row["reused"] else f"{row['seconds']:.1f} s"
        print(f"[{done}/{total}] {row['row']}, {row['a']} ↔ {row['b']}, seed {row['seed']}: {what} ({how})",
              file=sys.stderr, flush=True)

    result = run_sweep(grid, executor=args.executor, address=args.address, store=store_for(args), out=args.out,
                       gpus_per_cell=args.gpus_per_cell,
                       source="cli", progress=progress)
    if args.json:
        print_json(result.to_json())
        return
    print(f"{grid.name}: {len(result.cells)} cells ({result.executed} executed, {result.reused} reused from the "
          f"run history) on {result.executor}")
    print(result.summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    widths = width_text(width_table(result.cells))
    if widths:
        print(f"\nthe barrier against width (share of the vanilla barrier closed):\n{widths}")
    failed = result.cells[result.cells["error"].notna()]
    for _, row in failed.iterrows():
        print(f"failed: {row['row']}, {row['a']} ↔ {row['b']}, seed {row['seed']}: {row['error']}")
    if result.out:
        widths_file = " and widths.csv" if (result.out / "widths.csv").is_file() else ""
        print(f"wrote {result.out}/cells.csv, cells.parquet, summary.csv{widths_file}")
    if result.run_id:
        print(f"recorded as run {result.run_id}")


def tables_written(args, name: str, cells, summary) -> bool:
    """A table preset's output: `--out` gets NAME.csv and NAME-cells.csv; `--json` prints both (and
    then the caller prints nothing more: True)."""
    if args.out:
        from pathlib import Path

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        cells.to_csv(out / f"{name}-cells.csv", index=False)
        summary.to_csv(out / f"{name}.csv", index=False)
    if args.json:
        print_json({"cells": cells.to_dict(orient="records"), "summary": summary.to_dict(orient="records"),
                    "out": args.out})
    return bool(args.json)


def peers(args) -> None:
    """`--preset peers`: one merged model per method on each seed pair (symalign.sweeps.peers). --seeds picks
    the zoo seeds that make the pairs (default 0 1 2); nothing is recorded (a merge run per cell would be
    21 checkpoints on disk)."""

    from symalign.sweeps.peers import peers_cells, peers_summary, peers_text

    def progress(done: int, total: int, row: dict) -> None:
        print(f"[{done}/{total}] {row['method']}, {row['a']} ↔ {row['b']}: merged loss {row['loss']:.4f}, "
              f"accuracy {row['accuracy']:.3f} ({row['seconds']:.1f} s)", file=sys.stderr, flush=True)

    cells = peers_cells(args.family or "", args.seeds, steps=args.steps, max_examples=args.max_examples,
                        progress=progress)
    summary = peers_summary(cells)
    if tables_written(args, "peers", cells, summary):
        return
    print(f"peers {args.family}: merged models on {cells[['a', 'b']].drop_duplicates().shape[0]} seed pairs "
          "(mean ± std over the pairs)")
    print(peers_text(summary, cells))
    if args.out:
        print(f"wrote {args.out}/peers.csv and peers-cells.csv")


def zhang(args) -> None:
    """`--preset zhang-table1|zhang-table2|zhang-fig3|zhang-fig6`: Zhang et al.'s Table 1 (Simple, Fisher, RegMean on
    classifiers, without and with attention matching), Table 2 (six fusion methods × without matching, matching
    without rescaling and matching) or Fig. 3 (matching without ATTN, FFN or rescaling) on each seed pair of
    --family (symalign.sweeps.zhang); nothing recorded."""
    from symalign.sweeps.zhang import MEASURES, PRESETS, zhang_cells, zhang_summary, zhang_text

    def progress(done: int, total: int, row: dict) -> None:
        print(f"[{done}/{total}] {row['fusion']}, {row['state']}, {row['a']} ↔ {row['b']}: merged accuracy "
              f"{row['accuracy']:.3f}, loss {row['loss']:.4f} ({row['seconds']:.1f} s)", file=sys.stderr, flush=True)

    cells = zhang_cells(args.family or "", args.seeds, max_examples=args.max_examples, progress=progress,
                        preset=args.preset)
    summary = zhang_summary(cells)
    if tables_written(args, args.preset, cells, summary):
        return
    pairs = cells[["a", "b"]].drop_duplicates().shape[0]
    spec = PRESETS[args.preset]
    print(f"Zhang et al. {spec.table.name} on {args.family}: {MEASURES[spec.measure][0]}, mean ± std over {pairs} "
          "seed pairs")
    print(zhang_text(summary, cells, preset=args.preset))
    if args.out:
        print(f"wrote {args.out}/{args.preset}.csv and {args.preset}-cells.csv")


def zhang_figure(args) -> None:
    """`--preset zhang-fig4|zhang-fig5`: Zhang et al.'s distance table after each matching, or the loss along
    the path by which parts are matched (symalign.sweeps.zhang_figures); --out also gets fig5's chart."""
    from symalign.sweeps import zhang_figures as z

    def progress(done: int, total: int, row: dict) -> None:
        value = f"distance {row['distance']:.4f}" if "distance" in row else f"barrier {row['barrier']:.4f}"
        print(f"[{done}/{total}] {row['row']}, {row['a']} ↔ {row['b']}: {value}", file=sys.stderr, flush=True)

    if args.preset == "zhang-fig4":
        cells = z.fig4_cells(args.family or "", args.seeds, progress=progress)
        summary = z.fig4_summary(cells)
        if tables_written(args, args.preset, cells, summary):
            return
        print(f"Zhang et al. Fig. 4 on {args.family}: whole-model distance after each matching, mean ± std")
        print(z.fig4_text(summary, cells))
    else:
        curves = z.fig5_curves(args.family or "", args.seeds, points=args.points or 21,
                               max_examples=args.max_examples, progress=progress)
        cells = z.fig5_cells(curves)
        if tables_written(args, args.preset, cells, cells.groupby(["row", "lambda"], sort=False)["loss"].mean()
                          .reset_index()):
            return
        print(f"Zhang et al. Fig. 5 on {args.family}: loss along A → T(B) by which parts are matched")
        print(z.fig5_text(curves))
        if args.out:
            z.fig5_figure(curves, args.family).write_html(f"{args.out}/zhang-fig5.html", include_plotlyjs="cdn")
    if args.out:
        print(f"wrote {args.out}/{args.preset}.csv and {args.preset}-cells.csv")


def transfusion(args) -> None:
    """`--preset transfusion-table3|transfusion-fig4`: TransFusion's head strategies for task-vector transport
    on the family's fine-tunes (symalign.sweeps.transfusion); --seeds picks the fine-tune seeds. Nothing recorded."""
    from symalign.sweeps.transfusion import preset_view, transfusion_cells

    def progress(done: int, total: int, row: dict) -> None:
        print(f"[{done}/{total}] {row['strategy']}, {row['a_ft']} → {row['b']} ({row['seconds']:.1f} s)",
              file=sys.stderr, flush=True)

    view = preset_view(args.preset)
    cells = transfusion_cells(args.family or "", args.seeds, max_examples=args.max_examples, alphas=view.alphas,
                              strategies=view.strategies, progress=progress, shots=view.shots)
    summary = view.summary(cells)
    if tables_written(args, args.preset, cells, summary):
        return
    print(view.heading.format(family=args.family, n=cells[["a_ft", "b"]].drop_duplicates().shape[0]))
    print(view.text(summary, cells))
    if args.out:
        print(f"wrote {args.out}/{args.preset}.csv and {args.preset}-cells.csv")


def transfusion_fig5(args) -> None:
    """`--preset transfusion-fig5`: TransFusion's Fig. 5, the path A → B after each alignment it compares
    (symalign.sweeps.transfusion_fig5); --seeds picks the zoo seeds that make the pairs. Nothing recorded."""
    import pandas as pd

    from symalign.sweeps.transfusion_fig5 import fig5_curves, fig5_text

    def progress(done: int, total: int, row: dict) -> None:
        print(f"[{done}/{total}] {row['row']}, {row['a']} ↔ {row['b']}: barrier {row['barrier']:.4f}",
              file=sys.stderr, flush=True)

    curves = fig5_curves(args.family or "", args.seeds, points=args.points or 21, max_examples=args.max_examples,
                         progress=progress)
    cells = pd.DataFrame([{"row": label, "a": c["a"], "b": c["b"], "lambda": lam, "loss": loss,
                           "barrier": c["barrier"]} for label, runs in curves.items() for c in runs
                          for lam, loss in zip(c["lambdas"], c["loss"])])
    if tables_written(args, args.preset, cells, cells.groupby(["row", "lambda"], sort=False)["loss"].mean()
                      .reset_index()):
        return
    print(f"TransFusion Fig. 5 on {args.family}: the path A → B after each alignment")
    print(fig5_text(curves))
    if args.out:
        print(f"wrote {args.out}/{args.preset}.csv and {args.preset}-cells.csv")


def verma(args) -> None:
    """`--preset verma-heads|verma-residual|verma-components|verma-classifiers`: Verma & Elbayad's tables
    (symalign.sweeps.verma); --seeds picks the zoo seeds that make the pairs. Nothing is recorded: two rows
    are not symmetries, so they are not align runs."""
    from symalign.sweeps.verma import verma_cells, verma_summary, verma_text

    def progress(done: int, total: int, row: dict) -> None:
        pppl = "" if math.isnan(row["pppl_barrier"]) else f"PPPL barrier {row['pppl_barrier']:.3f}, "
        print(f"[{done}/{total}] {row['row']}, {row['a']} ↔ {row['b']}: {pppl}loss barrier {row['loss_barrier']:.4f} "
              f"({row['seconds']:.1f} s)", file=sys.stderr, flush=True)

    cells = verma_cells(args.preset, args.family, args.seeds, points=args.points or 21,
                        max_examples=args.max_examples, progress=progress)
    summary = verma_summary(cells)
    if tables_written(args, args.preset, cells, summary):
        return
    pairs = cells[["a", "b"]].drop_duplicates().shape[0]
    print(f"{args.preset}: barriers mean ± SE over {pairs} seed pair{'s' * (pairs > 1)}")
    print(verma_text(args.preset, summary, cells))
    if args.out:
        print(f"wrote {args.out}/{args.preset}.csv and {args.preset}-cells.csv")


def curves(args) -> None:
    """`--preset curves`: on each seed pair of --family, the straight line, the aligned straight line, a
    fitted Bézier curve and the aligned curve (symalign.sweeps.curves); the fits are recorded curve runs,
    reused when asked again. --steps sets the fits' steps; --seeds the zoo seeds that make the pairs."""
    from dataclasses import replace

    from symalign.landscape.curve_options import CurveOptions
    from symalign.sweeps.curves import curves_cells, curves_summary, curves_text

    def progress(done: int, total: int, row: dict) -> None:
        print(f"[{done}/{total}] {row['a']} ↔ {row['b']}: line {row['line_barrier']:.3f}, curve {row['barrier']:.3f}",
              file=sys.stderr, flush=True)

    options = CurveOptions() if args.steps is None else replace(CurveOptions(), steps=args.steps)
    cells = curves_cells(args.family or "", args.seeds, options=options, max_examples=args.max_examples,
                         store=store_for(args), progress=progress)
    summary = curves_summary(cells)
    if tables_written(args, "curves", cells, summary):
        return
    print(f"curves {args.family}: {len(cells)} seed pairs, barriers mean ± std (aligned: weight matching, all classes)")
    print(curves_text(summary, cells))
    if args.out:
        print(f"wrote {args.out}/curves.csv and curves-cells.csv")


COMMANDS = (add_sweep,)


def _table_presets() -> dict:
    """The presets that are not alignment grids, each with the handler that prints its table (one registry:
    `symalign paper TABLE` names the same presets through symalign.papers)."""
    from symalign.sweeps.verma_tables import VERMA_TABLES

    handlers = {"peers": peers, "curves": curves, "zhang-table1": zhang, "zhang-table2": zhang, "zhang-fig3": zhang,
                "zhang-fig4": zhang_figure, "zhang-fig5": zhang_figure, "zhang-fig6": zhang,
                "transfusion-table1": transfusion,
                "transfusion-table2": transfusion, "transfusion-table3": transfusion,
                "transfusion-table4": transfusion,
                "transfusion-fig4": transfusion, "transfusion-fig5": transfusion_fig5}
    return handlers | {name: verma for name in VERMA_TABLES}


TABLE_PRESETS = _table_presets()
