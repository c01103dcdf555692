"""Run a sweep: check the whole grid, reuse cells the run history already holds, execute the rest
(on Ray when it is installed, else one after another), and tabulate the barriers.

Why the run history is the ledger: every cell is an ordinary recorded `align` run, so a sweep
that was stopped resumes where it was (a cell whose identical run finished is reused, not
recomputed), the app and `symalign runs` show each cell, and a cell a user already ran by hand
counts too."""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from symalign.errors import SymalignError
from symalign.runs.settings import AlignSettings, SweepSettings
from symalign.runs.store import Run, RunStore
from symalign.sweeps.executors import assigned_gpus, check_address, pick_executor, run_cells
from symalign.sweeps.grid import Cell, Grid
from symalign.sweeps.widths import width_table

CellProgress = Callable[[int, int, dict], None]  # done, total, the finished cell's row


@dataclass
class SweepResult:
    run_id: str | None
    cells: pd.DataFrame  # one row per cell
    summary: pd.DataFrame  # one row per grid row: barrier per pair, mean ± std over pairs
    executed: int
    reused: int
    executor: str
    out: Path | None

    def to_json(self) -> dict:
        cells = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                 for row in self.cells.to_dict(orient="records")]
        return {"cells": cells, "executed": self.executed, "reused": self.reused, "executor": self.executor,
                "summary": self.summary.to_dict(orient="records"), "out": str(self.out) if self.out else None,
                "run": self.run_id}


@lru_cache(maxsize=64)
def _spec(ref: str):
    from symalign.models import load_model

    model = load_model(ref)
    return model.family.spec(model.config, canonical=True)


def row_classes(cell: Cell) -> dict[str, str]:
    """The row's classes on this cell's architecture. A preset row (`all`, `permutations`, the named
    grids) is an ablation meant for any family, so a class the family refuses becomes the widest one
    it admits (SymmetrySpec.fit): `weight (all)` uses rotary QK maps on a Llama and a residual
    permutation on a BERT (the run records what was used). A table of classes the user wrote is
    taken as written, so an inadmissible choice is refused rather than quietly changed. With `layers`,
    a preset row drops its residual map (symalign.match.layers); a written one is refused."""
    from symalign.match.layers import classes_for_layers

    spec = _spec(cell.a)
    classes = spec.fit(cell.row.class_dict) if cell.row.fits else cell.row.class_dict
    return spec.with_experts(classes_for_layers(classes, dict(cell.row.options).get("layers"), preset=cell.row.fits))


def _config(cell: Cell, grid: Grid, data: str):
    from symalign.match.config import AlignConfig
    from symalign.match.matchers import options_of

    declared = options_of(cell.row.method)
    options = {"steps": grid.steps} if grid.steps is not None and "steps" in declared else {}
    options.update(cell.row.options)  # the row's own (and its [grid] values) over the grid's
    return AlignConfig.from_options(options, method=cell.row.method, classes=row_classes(cell), data=data,
                                    seed=cell.seed)


def _evaluation(cell: Cell, grid: Grid) -> dict:
    """The cell's data, points and examples: the row's where it sets them, else the grid's."""
    return {"data": grid.data, "points": grid.points, "max_examples": grid.max_examples, "split": grid.split,
            **dict(cell.row.evaluation)}


def check_grid(grid: Grid) -> dict[Cell, str]:
    """Refuse a grid with a model that does not load, a pair that cannot be aligned, or a class its
    architecture does not admit, naming the cell, before anything runs. Returns each cell's data spec."""
    from symalign.data import load_data
    from symalign.models import load_model
    from symalign.models.io import default_data_spec
    from symalign.models.widen import check_pair
    from symalign.workflows.execute import fitted

    grid.check_options()
    if not grid.pairs or not grid.rows:
        raise SymalignError("the sweep has no cells (no pairs or no rows)")
    cells = grid.cells()
    models, data = {}, {}
    for cell in cells:
        try:
            for ref in (cell.a, cell.b):
                if ref not in models:
                    models[ref] = load_model(ref)
            check_pair(models[cell.a], models[cell.b])
            data[cell] = _evaluation(cell, grid)["data"] or default_data_spec(models[cell.a])
            # an inadmissible class, a data-hungry method without data, a bad option, a block the model
            # lacks: refused here, as align_run would refuse it
            fitted(models[cell.a], _config(cell, grid, data[cell]))
        except SymalignError as exc:
            raise SymalignError(f"{cell.describe()}: {exc}") from None
    for spec in set(data.values()):
        load_data(spec)  # a bad --data fails here, once, not in every cell
    return data


def _payload(cell: Cell, grid: Grid, data: str) -> dict:
    evaluation = _evaluation(cell, grid)
    return {"a": cell.a, "b": cell.b, "config": _config(cell, grid, data).to_json(), "points": evaluation["points"],
            "max_examples": evaluation["max_examples"], "split": evaluation["split"],
            "label": f"{grid.name}: {cell.row.name}"}


def finished_runs(store: RunStore) -> dict[str, Run]:
    """Finished align runs that measured a barrier, by their settings (newest wins), and finished
    canonical-form `barrier` runs by `vanilla_key` (a vanilla cell is the same curve: Align's and
    the CLI's vanilla barriers count, issue #56): read once per sweep, so looking a cell up costs
    no database read."""
    index: dict[str, Run] = {}
    for run in reversed(store.list(kind="barrier", state="done")):
        settings = run.typed_settings
        if "barrier" in run.metrics and getattr(settings, "form", "canonical") == "canonical":
            index[vanilla_key(run.model_a, run.model_b, settings.data, settings.points, settings.max_examples,
                              settings.split)] = run
    for run in reversed(store.list(kind="align", state="done")):  # oldest first, so the newest overwrites
        if "config" not in run.settings or "barrier" not in run.metrics:
            continue  # measured nothing (or a row from before settings were typed)
        settings = run.typed_settings
        if settings.measure:
            index[settings.reuse_key(run.model_a, run.model_b)] = run
    return index


def vanilla_key(a: str, b: str, data: str | None, points: int, max_examples: int | None, split: str) -> str:
    """What decides a vanilla curve: the pair, its data and evaluation (no matcher, no classes)."""
    return json.dumps(["vanilla", a, b, data, points, max_examples, split])


def reusable(finished: dict[str, Run], cell: Cell, payload: dict) -> Run | None:
    """A finished run with this cell's numbers: an align run of the same settings, or for a vanilla
    row (method none) any canonical-form barrier run of the pair on the same data and evaluation."""
    asked = AlignSettings(payload["config"], payload["points"], payload["max_examples"], split=payload["split"])
    run = finished.get(asked.reuse_key(payload["a"], payload["b"]))
    if run is None and cell.row.method == "none":
        run = finished.get(vanilla_key(payload["a"], payload["b"], payload["config"].get("data"), payload["points"],
                                       payload["max_examples"], payload["split"]))
    return run


def execute_cell(payload: dict, store_path: str | None, home: str | None, threads: int | None = None) -> dict:
    """One cell as a recorded align run; runs in this process or in a Ray worker. Never raises: a
    failure comes back as its one-line message (and the run is recorded as failed)."""
    import torch

    from symalign.match.config import AlignConfig
    from symalign.runs.recording import failure_message
    from symalign.workflows.execute import align_run

    if home:
        os.environ["SYMALIGN_HOME"] = home  # a Ray worker (maybe on another node) writes where the driver does
    if threads:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    store = RunStore(store_path) if store_path else None
    try:
        result = align_run(payload["a"], payload["b"], AlignConfig(**payload["config"]), points=payload["points"],
                           max_examples=payload["max_examples"], store=store, source="sweep", label=payload["label"],
                           split=payload.get("split", "eval"))
    except Exception as exc:
        return {"error": failure_message(exc), "seconds": time.perf_counter() - start, "run_id": None,
                "gpus": assigned_gpus()}
    return {"barrier": result.curve.barrier, "barrier_mean": result.curve.barrier_mean,
            "accuracy_barrier": result.curve.accuracy_barrier,
            "pppl_barrier": result.curve.extra.get("pseudo_perplexity_barrier", math.nan), "run_id": result.run_id,
            "seconds": time.perf_counter() - start, "error": None, "gpus": assigned_gpus()}


def cells_frame(cells: list[dict]) -> pd.DataFrame:
    columns = ["row", "a", "b", "seed", "method", "classes", "barrier", "barrier_mean", "accuracy_barrier",
               "pppl_barrier", "seconds", "reused", "run_id", "error", "gpus"]
    return pd.DataFrame(cells, columns=columns)


def summary_frame(cells: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """The ablation table: a line per grid row, a column per pair (mean over matcher seeds), then the
    mean ± std over pairs (the std of one pair is 0), the standard error of that mean with its n (the
    pairs), and the accuracy barrier's mean ± std in percentage points."""
    rows = []
    for row in grid.rows:
        mine = cells[cells["row"] == row.name]
        line = {"row": row.name, "method": row.method}
        per_pair, accuracy = [], []
        for a, b in grid.pairs:
            pair = mine[(mine["a"] == a) & (mine["b"] == b)]
            values = pair["barrier"].dropna().tolist()
            line[f"{a} ↔ {b}"] = statistics.mean(values) if values else float("nan")
            per_pair += [line[f"{a} ↔ {b}"]] if values else []
            accuracy += [statistics.mean(pair["accuracy_barrier"].dropna().tolist() or [math.nan])]
        line["mean"] = statistics.mean(per_pair) if per_pair else float("nan")
        line["std"] = statistics.stdev(per_pair) if len(per_pair) > 1 else 0.0
        line["n"] = len(per_pair)
        line["sem"] = line["std"] / math.sqrt(len(per_pair)) if per_pair else float("nan")
        accuracy = [v for v in accuracy if not math.isnan(v)]
        line["accuracy_mean"] = statistics.mean(accuracy) if accuracy else float("nan")
        line["accuracy_std"] = statistics.stdev(accuracy) if len(accuracy) > 1 else 0.0
        pppl = [v for v in (statistics.mean(mine[(mine["a"] == a) & (mine["b"] == b)]["pppl_barrier"].dropna()
                                            .tolist() or [math.nan]) for a, b in grid.pairs) if not math.isnan(v)]
        if pppl:  # masked LMs: the barrier in pseudo-perplexity too (Verma & Elbayad's unit)
            line["pppl_mean"] = statistics.mean(pppl)
            line["pppl_std"] = statistics.stdev(pppl) if len(pppl) > 1 else 0.0
        rows.append(line)
    return pd.DataFrame(rows)


def run_sweep(grid: Grid, executor: str = "auto", address: str | None = None, store: RunStore | None = None,
              out: str | Path | None = None, source: str = "api", progress: CellProgress | None = None,
              gpus_per_cell: float | None = None) -> SweepResult:
    """Check the grid, then run every cell the history does not already hold; record the sweep.
    `gpus_per_cell` (Ray): GPUs each cell asks for (default: one on a cluster with GPUs, else none)."""
    from symalign.runs.recording import recorded

    executor = pick_executor(executor)
    if address and executor != "ray":
        raise SymalignError("--address joins a Ray cluster: use it with --executor ray or auto (with Ray installed)")
    if address:
        check_address(address)
    if gpus_per_cell is not None and (gpus_per_cell < 0 or (gpus_per_cell and executor != "ray")):
        raise SymalignError(f"--gpus-per-cell {gpus_per_cell:g}: " + ("must be at least 0" if gpus_per_cell < 0 else
                            "GPUs are asked of Ray: use --executor ray or auto (with Ray installed)"))
    if out is not None:
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise SymalignError(f"--out {out} exists and is not a folder")
    data = check_grid(grid)
    cells = grid.cells()
    payloads = [_payload(c, grid, data[c]) for c in cells]
    rows: list[dict | None] = [None] * len(cells)
    todo = []
    finished = finished_runs(store) if store is not None else {}
    done = 0
    for i, (cell, payload) in enumerate(zip(cells, payloads)):
        run = reusable(finished, cell, payload)
        if run is None:
            todo.append(i)
            continue
        rows[i] = _row(cell, {"barrier": run.metrics["barrier"], "barrier_mean": run.metrics["barrier_mean"],
                              "accuracy_barrier": run.metrics.get("accuracy_barrier", float("nan")),
                              "pppl_barrier": (run.curve or {}).get("pseudo_perplexity_barrier", math.nan),
                              "run_id": run.id, "seconds": 0.0, "error": None}, reused=True)
        done += 1
        if progress:
            progress(done, len(cells), rows[i])
    models = sorted({m for p in grid.pairs for m in p})
    settings = SweepSettings(grid.to_json(), executor, address)
    with recorded(store, "sweep", models[0], models[1] if len(models) > 1 else "", "sweep", settings, source,
                  grid.name, models) as run:
        store_path = str(store.path) if store is not None else None
        mine = [payloads[i] for i in todo]
        for k, result in run_cells(execute_cell, mine, store_path, executor, address,
                                       gpus_per_cell):
            i = todo[k]
            rows[i] = _row(cells[i], result, reused=False)
            done += 1
            if progress:
                progress(done, len(cells), rows[i])
        frame = cells_frame([r for r in rows if r is not None])
        summary = summary_frame(frame, grid)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            frame.to_csv(out / "cells.csv", index=False)
            frame.astype({"classes": str}).to_parquet(out / "cells.parquet", index=False)
            summary.to_csv(out / "summary.csv", index=False)
            widths = width_table(frame)
            if not widths.empty:
                widths.to_csv(out / "widths.csv", index=False)
        result = SweepResult(run.id, frame, summary, len(todo), len(cells) - len(todo), executor, out)
        recorded_json = result.to_json()
        run.finish({"cells": recorded_json["cells"], "summary": recorded_json["summary"], "executed": result.executed,
                    "reused": result.reused, "failed": int(frame["error"].notna().sum())}, out)
    return result


def _row(cell: Cell, result: dict, reused: bool) -> dict:
    from symalign.runs.table import classes_text

    return {"row": cell.row.name, "a": cell.a, "b": cell.b, "seed": cell.seed, "method": cell.row.method,
            "classes": classes_text(cell.row.class_dict), "barrier": result.get("barrier", float("nan")),
            "barrier_mean": result.get("barrier_mean", float("nan")),
            "accuracy_barrier": result.get("accuracy_barrier", float("nan")),
            "pppl_barrier": result.get("pppl_barrier", float("nan")), "seconds": result["seconds"],
            "reused": reused, "run_id": result.get("run_id"), "error": result.get("error"),
            "gpus": result.get("gpus", "")}
