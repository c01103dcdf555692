"""Does learned matching close the barrier on pairs its defaults were not tuned on? (issue #29)

    python -m research.experiments.learned_heldout [--set eval|dev|all] [--only NAME ...] [--cache DIR]
                                         [--presets all full] [--threads 2] [--json FILE]
                                         [--width N]

For every pair of research/experiments/heldout_pairs.py (trained and cached on first use): the barrier on
the evaluation split of the vanilla path, of weight matching (all classes) and of learned
matching at its defaults for each class preset asked for (`--presets`, default `all full`: what
`symalign align A B --method learned --classes all --data D` does, and the same with `--classes
full`, invertible maps inside heads), the share of the vanilla barrier each closes, and the
seconds learned matching took (loading, weight matching's start and learning; not the barrier
evaluation), also as a count of plain training steps of the pair's model (one forward and
backward at the same batch, timed on the same machine just before: machines here differ by 2-3x
from day to day, the count much less). `--width N` runs the pairs' recipes at another width
(`heldout_pairs.widened`: how much of what is left is narrowness). The README's table is run without it."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from research.experiments import heldout_pairs
from symalign.data import load_data  # noqa: E402
from symalign.landscape.interpolation import interpolation_curve  # noqa: E402
from symalign.match.align import align  # noqa: E402
from symalign.match.config import AlignConfig  # noqa: E402
from symalign.models import load_model  # noqa: E402


def learned_row(a_path: Path, b_path: Path, spec: str, data, preset: str, steps: int | None = None) -> dict:
    """Learned matching under one class preset (at `steps`, or the data's default): its barrier and what it took."""
    start = time.perf_counter()
    a, b = load_model(str(a_path)), load_model(str(b_path))
    learned = align(a, b, AlignConfig(method="learned", preset=preset, data=spec, steps=steps))
    seconds = time.perf_counter() - start
    summary = learned.report.learned_summary
    return {"learned": interpolation_curve(a, learned.aligned, data).barrier, "seconds": seconds,
            "steps": summary.steps, "stopped": summary.stopped, "start_check": summary.start_check,
            "best_check": summary.best_check, "start": summary.start or 0,
            "start_checks": summary.start_checks or []}


def plain_step_seconds(model, data, batch_size: int = 64, repeats: int = 4) -> float:
    """Seconds of one forward and backward of the pair's own model at learned matching's batch size:
    the machine's speed on this model, so a run's seconds can be read as a count of plain training
    steps (machines here differ by 2-3x from day to day; the count much less)."""
    from symalign.landscape.evaluate import batch_loss

    module = model.to_module().eval()  # gradients, no dropout: as learned matching runs it
    generator = torch.Generator().manual_seed(0)
    times = []
    for _ in range(repeats + 1):
        inputs, y = data.train_batch(model, batch_size, generator)
        begin = time.perf_counter()
        logits = module(**inputs).logits
        total, _ = batch_loss(logits[:, : y.shape[1]] if y.dim() == 2 else logits, y)
        total.backward()
        times.append(time.perf_counter() - begin)
        module.zero_grad(set_to_none=True)
    return statistics.median(times[1:])  # the first pays for allocation


def row_for(r: heldout_pairs.PairRecipe, cache: Path, baselines: dict, log=print,
            presets: tuple[str, ...] = ("all", "full"), steps: int | None = None) -> dict:
    a_path, b_path = heldout_pairs.pair_paths(r, cache, log=log)
    spec = heldout_pairs.data_spec(r, cache)
    data = load_data(spec)
    key = f"{a_path}|{b_path}"
    if key not in baselines:  # the pair's own models, loaded only when their baselines are not cached
        a, b = load_model(str(a_path)), load_model(str(b_path))
        vanilla = interpolation_curve(a, b, data).barrier
        weight = align(a, b, AlignConfig(method="weight", preset="all"))
        baselines[key] = {"vanilla": vanilla, "weight": interpolation_curve(a, weight.aligned, data).barrier}
    vanilla = baselines[key]["vanilla"]
    row = {"pair": r.name, "set": r.split, **baselines[key],
           "plain_step": plain_step_seconds(load_model(str(a_path)), data)}
    for preset in presets:
        learned = learned_row(a_path, b_path, spec, data, preset, steps)
        learned["closed"] = 1 - learned["learned"] / vanilla if vanilla > 0 else float("nan")
        learned["plain_steps"] = learned["seconds"] / row["plain_step"]
        row[preset] = learned
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["dev", "eval", "wide", "all"], default="eval")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--cache", type=Path, default=heldout_pairs.DEFAULT_CACHE)
    parser.add_argument("--presets", nargs="+", default=["all", "full"], choices=["all", "full"],
                        help="the class presets learned matching runs under (a column each)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--width", type=int, default=None,
                        help="the recipes at this residual width, heads kept (an experiment; trained and cached)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    baseline_file = args.cache / "baselines.json"
    baselines = json.loads(baseline_file.read_text()) if baseline_file.is_file() else {}
    rows = []
    presets = tuple(args.presets)
    print("| pair | set | vanilla | weight (all) | " + " | ".join(
        f"learned ({p}) | closed ({p}) | seconds ({p}) | steps ({p})" for p in presets) + " | plain step (s) |")
    print("|---|---|---|---|" + "---|---|---|---|" * len(presets) + "---|")
    for r in heldout_pairs.chosen(args.set, args.only, args.width):
        row = row_for(r, args.cache, baselines, log=lambda m: print(m, file=sys.stderr, flush=True),
                      presets=presets)
        baseline_file.parent.mkdir(parents=True, exist_ok=True)
        baseline_file.write_text(json.dumps(baselines, indent=1))
        rows.append(row)
        cells = " | ".join(f"{row[p]['learned']:.4f} | {100 * row[p]['closed']:.1f}% | {row[p]['seconds']:.0f} "
                           f"({row[p]['plain_steps']:.0f} plain steps) | {row[p]['steps']}" for p in presets)
        print(f"| {row['pair']} | {row['set']} | {row['vanilla']:.3f} | {row['weight']:.3f} | {cells} | "
              f"{row['plain_step']:.3f} |", flush=True)
    if len(rows) > 1:
        for p in presets:
            closed = [r[p]["closed"] for r in rows]
            print(f"\nlearned ({p}) closed: mean {100 * statistics.mean(closed):.1f}%, worst {100 * min(closed):.1f}%; "
                  f"slowest {max(r[p]['seconds'] for r in rows):.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
