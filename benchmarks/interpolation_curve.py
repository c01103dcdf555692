"""Time a 21-point interpolation curve against 21 plain forward passes over the same examples.

The curve reuses one module through torch.func.functional_call, so its overhead over plain
forwards should be small (lerp of the parameters per λ). Prints a table and the ratio.

    python -m benchmarks.interpolation_curve [zoo:vit-digits/0 zoo:vit-digits/1] [--max-examples N] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import torch

from benchmarks.plain import plain_forwards
from symalign.data import load_data
from symalign.landscape.evaluate import Evaluator
from symalign.landscape.interpolation import interpolation_curve
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pairs", nargs="*", default=["zoo:vit-digits/0", "zoo:vit-digits/1",
                                                     "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1"])
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--points", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, best of {args.repeats}")
    print(f"{'pair':<48}{'examples':>9}{'curve s':>9}{'plain s':>9}{'ratio':>7}")
    for a_ref, b_ref in zip(args.pairs[::2], args.pairs[1::2]):
        a, b = load_model(a_ref), load_model(b_ref)
        data = load_data(default_data_spec(a))
        canon = canonicalize(a)
        examples = Evaluator(canon, data, args.max_examples).examples
        curve_s, plain_s = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            interpolation_curve(a, b, data, points=args.points, max_examples=args.max_examples)
            curve_s.append(time.perf_counter() - start)
            plain_s.append(plain_forwards(canon, data, args.max_examples, args.points))
        c, p = min(curve_s), min(plain_s)
        print(f"{a_ref + ' vs ' + b_ref:<48}{examples:>9}{c:>9.2f}{p:>9.2f}{c / p:>7.2f}")


if __name__ == "__main__":
    main()
