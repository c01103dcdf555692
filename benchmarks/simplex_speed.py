"""Time a simplex surface against the same number of plain forward passes over the same examples.

The surface reuses one module through torch.func.functional_call and mixes three parameter sets
per grid point, so it should cost little more than the forwards themselves (target ≤ 1.3×).
Resolution 10 is 66 grid points.

    python -m benchmarks.simplex_speed [--recipes vit-digits gpt-shakespeare] [--resolution 10]
                                       [--max-examples N] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import torch

from benchmarks.plain import plain_forwards
from symalign.data import load_data
from symalign.landscape.evaluate import Evaluator
from symalign.landscape.simplex import barycentric_grid, simplex_surface
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", nargs="*", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--resolution", type=int, default=10)
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    points = len(barycentric_grid(args.resolution))
    print(f"torch {torch.__version__}, {args.threads} threads, resolution {args.resolution} ({points} points), "
          f"best of {args.repeats}")
    print(f"{'recipe':<18}{'examples':>9}{'surface s':>11}{'plain s':>9}{'ratio':>7}")
    for recipe in args.recipes:
        models = [load_model(f"zoo:{recipe}/{i}") for i in range(3)]
        data = load_data(default_data_spec(models[0]))
        canon = canonicalize(models[0])
        examples = Evaluator(canon, data, args.max_examples).examples
        surface_s, plain_s = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            simplex_surface(*models, data, resolution=args.resolution, max_examples=args.max_examples)
            surface_s.append(time.perf_counter() - start)
            plain_s.append(plain_forwards(canon, data, args.max_examples, points))
        s, p = min(surface_s), min(plain_s)
        print(f"{recipe:<18}{examples:>9}{s:>11.2f}{p:>9.2f}{s / p:>7.2f}")


if __name__ == "__main__":
    main()
