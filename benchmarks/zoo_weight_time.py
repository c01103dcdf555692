"""Weight matching at the zoo's scale, timed: the run every sweep cell, report row, demo part and test repeats.

    python -m benchmarks.zoo_weight_time [--recipes vit-digits gpt-shakespeare] [--repeats 5] [--threads 2]

Aligns seed 1 to seed 0 of each recipe with `--classes all` at the defaults (plain coordinate descent in float64:
no inner passes below LARGE_MODEL_PARAMETERS), once to warm up, then `--repeats` times, and prints each run's
seconds, the median, the sweeps, the final distance and a checksum of aligned B (the sum of its entries in
float64). Two versions of the code agree on the result when the last three columns agree to every digit; time
them in paired runs minutes apart on an idle machine, e.g. `PYTHONPATH=/path/to/other/checkout python ...`
(docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model


def checksum(model) -> float:
    return float(sum(t.double().sum() for t in model.tensors.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="*", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"| pair | runs (s) | median s | sweeps | distance | aligned B checksum |  ({args.threads} threads)")
    print("|---|---|---|---|---|---|")
    for recipe in args.recipes:
        a, b = load_model(f"zoo:{recipe}/0"), load_model(f"zoo:{recipe}/1")
        config = AlignConfig(method="weight", preset="all")  # as `--classes all`
        align(a, b, config)  # warm: imports, first-call dispatch
        seconds = []
        for _ in range(args.repeats):
            began = time.perf_counter()
            result = align(a, b, config)
            seconds.append(time.perf_counter() - began)
        print(f"| {recipe} 0↔1 | {', '.join(f'{s:.3f}' for s in seconds)} | {statistics.median(seconds):.3f} | "
              f"{result.report.sweeps_run} | {result.report.distance_after!r} | {checksum(result.aligned)!r} |")


if __name__ == "__main__":
    main()
