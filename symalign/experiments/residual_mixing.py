"""Anderson mixing of weight matching's residual rotation against plain coordinate descent (issue #73
item 1): per zoo pair and window, the sweeps to the 1e-5 rule, the final distance and the barrier.

    python -m symalign.experiments.residual_mixing [--windows 0 2 3 5] [--points 7]

Window 0 is today's weight matching. Written up in docs/benchmarks.md ("Weight matching's convergence")."""

from __future__ import annotations

import argparse
import functools
import time

from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match import weight
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec

PAIRS = (("vit-digits", 0, 1), ("vit-digits", 0, 2), ("vit-digits", 1, 2), ("gpt-shakespeare", 0, 1),
         ("gpt-shakespeare", 0, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, nargs="+", default=[0, 2, 3, 5])
    parser.add_argument("--points", type=int, default=7)
    args = parser.parse_args()
    plain = weight.weight_match
    print("| pair | window | sweeps | distance | barrier | seconds |\n|---|---|---|---|---|---|")
    try:
        for family, i, j in PAIRS:
            a, b = canonicalize(load_model(f"zoo:{family}/{i}")), canonicalize(load_model(f"zoo:{family}/{j}"))
            data = load_data(default_data_spec(a))
            for window in args.windows:
                weight.weight_match = functools.partial(plain, residual_mixing=window)
                began = time.perf_counter()
                result = align(a, b, AlignConfig(method="weight", preset="all", seed=0, device="cpu"))
                seconds = time.perf_counter() - began
                barrier = interpolation_curve(a, result.aligned, data, points=args.points).barrier
                print(f"| {family} {i}↔{j} | {window} | {result.report.sweeps[-1].sweep} | "
                      f"{result.report.distance_after:.6f} | {barrier:.3f} | {seconds:.1f} |", flush=True)
    finally:
        weight.weight_match = plain


if __name__ == "__main__":
    main()
