"""The numbers the Home page's guided demo shows, through the demo's own code (symalign.demo).

    python benchmarks/guided_demo.py [--recipe vit-digits] [--threads 2]

Part 1 plants a random symmetry in seed 0 and undoes it with weight matching; part 2 aligns
seeds 0 and 1 with no alignment, weight matching and learned matching (all classes, the same
settings as the README's `symalign align ... --method learned --classes all` command)."""

from __future__ import annotations

import argparse
import time

import torch

from symalign.data import load_data
from symalign.demo import planted_demo, seeds_demo
from symalign.models import load_model
from symalign.runs import RunStore
from symalign.train.recipes import DEMO_DATA


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipe", default="vit-digits", choices=list(DEMO_DATA))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = DEMO_DATA[args.recipe]
    data = load_data(spec)
    a, b = load_model(f"zoo:{args.recipe}/0"), load_model(f"zoo:{args.recipe}/1")
    start = time.perf_counter()
    planted = planted_demo(a, data)
    print(f"threads: {args.threads}; {args.recipe}")
    print(f"1 · planted: max |Δlogit| {planted.function_gap:.1e}, weights moved {100 * planted.weight_change:.0f}%, "
          f"vanilla barrier {planted.vanilla['barrier']:.3f}, after weight matching {planted.aligned['barrier']:.1e} "
          f"({planted.align_seconds:.1f} s)")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(f"{tmp}/runs.sqlite")
        ids = seeds_demo(a, b, spec, store, data_source=data)
        runs = [store.get(i) for i in ids]
        print("2 · seeds 0 and 1: " + ", ".join(f"{r.label.removeprefix('demo: ')} {r.metrics['barrier']:.3f}"
                                                  for r in runs))
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
