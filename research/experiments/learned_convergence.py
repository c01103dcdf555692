"""Does learned matching converge to the same barrier whatever the seed and the thread count?

    python -m research.experiments.learned_convergence [--recipes vit-digits gpt-shakespeare] [--pairs 0,1 0,2 1,2]
                                             [--seeds 0 1 2] [--threads 1 2] [--steps 300] [--patience 3]
                                             [--json FILE]

For each zoo family, pair, matcher seed and thread count: learned matching with all classes
(what `symalign align A B --method learned --classes all --data D` does, default settings), the
barrier on the evaluation split, the wall time of loading and aligning, the steps the stopping
rule ran, and the last step with a permutation flip. Then per pair: the spread (max − min) of
the barrier over seeds and thread counts, and mean ± std per family (issue #14's table)."""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import load_model
from symalign.models.io import default_data_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", nargs="*", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--pairs", nargs="*", default=["0,1", "0,2", "1,2"])
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=None,
                        help="most learned steps (default: the data's, 600)")
    parser.add_argument("--patience", type=int, default=3, help="stale checks before stopping (default: 3)")
    parser.add_argument("--input-noise", type=float, default=None,
                        help="noise on training images (default: the data's, 0.3)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    print(f"steps {args.steps or 'data default'}, patience {args.patience}, input noise "
          f"{'data default' if args.input_noise is None else args.input_noise}")
    print("| recipe | pair | seed | threads | barrier | seconds | steps | last flip |")
    print("|---|---|---|---|---|---|---|---|")
    for recipe in args.recipes:
        for pair in args.pairs:
            i, j = pair.split(",")
            for seed in args.seeds:
                for threads in args.threads:
                    torch.set_num_threads(threads)
                    start = time.perf_counter()
                    a, b = load_model(f"zoo:{recipe}/{i}"), load_model(f"zoo:{recipe}/{j}")
                    spec = default_data_spec(a)
                    config = AlignConfig(method="learned", classes=CLASS_PRESETS["all"], data=spec, seed=seed,
                                         steps=args.steps, patience=args.patience, input_noise=args.input_noise)
                    result = align(a, b, config)
                    seconds = time.perf_counter() - start
                    curve = interpolation_curve(a, result.aligned, load_data(spec))
                    history = result.report.learned
                    last_flip = max([h.step for h in history if h.flips] or [0])
                    row = {"recipe": recipe, "pair": pair, "seed": seed, "threads": threads, "barrier": curve.barrier,
                           "seconds": seconds, "steps": result.report.learned_summary.steps,
                           "last_flip": last_flip}
                    rows.append(row)
                    print(f"| {recipe} | {pair} | {seed} | {threads} | {curve.barrier:.4f} | {seconds:.1f} | "
                          f"{row['steps']} | {last_flip} |", flush=True)
    print("\n| recipe | pair | barrier mean ± std | spread (max − min) | slowest run s |")
    print("|---|---|---|---|---|")
    for recipe in args.recipes:
        for pair in args.pairs + ["all"]:
            mine = [r for r in rows if r["recipe"] == recipe and (pair == "all" or r["pair"] == pair)]
            values = [r["barrier"] for r in mine]
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            print(f"| {recipe} | {pair} | {statistics.mean(values):.4f} ± {std:.4f} | "
                  f"{max(values) - min(values):.4f} | {max(r['seconds'] for r in mine):.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
