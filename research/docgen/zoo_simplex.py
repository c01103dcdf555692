"""Simplex surfaces over the three zoo seeds of each family: the README's three-model table.

    python -m research.docgen.zoo_simplex [--recipes vit-digits gpt-shakespeare] [--resolution 10]
                                     [--methods none weight learned] [--threads 2] [--json FILE]

For each recipe and method (universe alignment with all classes, then the surface at resolution
r over the evaluation split; gpt-shakespeare uses its first 64 windows), prints the maximum loss,
the largest barrier above the plane through the corner losses, the near-zero fraction (ε = 0.05)
and the seconds taken. The numbers are what `symalign simplex A B C --method M --classes all` prints."""

from __future__ import annotations

import argparse
import json
import time

import torch

from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.workflows.many import simplex_run

DATA = {"vit-digits": ("digits", None), "gpt-shakespeare": ("shakespeare", 64)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", nargs="*", default=list(DATA))
    parser.add_argument("--methods", nargs="*", default=["none", "weight", "learned"])
    parser.add_argument("--resolution", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the surfaces to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows, surfaces = [], {}
    print(f"threads: {args.threads}, resolution {args.resolution}, ε = 0.05, classes: all")
    print("| recipe | method | max loss | max barrier | near-zero fraction | corner losses | seconds |")
    print("|---|---|---|---|---|---|---|")
    for recipe in args.recipes:
        data, examples = DATA[recipe]
        for method in args.methods:
            start = time.perf_counter()
            config = AlignConfig(method=method, classes=CLASS_PRESETS["all"], data=data)
            _, s = simplex_run([f"zoo:{recipe}/{i}" for i in range(3)], config, resolution=args.resolution,
                               max_examples=examples)
            seconds = time.perf_counter() - start
            corners = ", ".join(f"{c:.3f}" for c in s.corner_loss)
            print(f"| {recipe} | {method} | {s.max_loss:.3f} | {s.max_barrier:.3f} | {s.near_zero_fraction:.2f} | "
                  f"{corners} | {seconds:.0f} |", flush=True)
            rows.append({"recipe": recipe, "method": method, "max_loss": s.max_loss, "max_barrier": s.max_barrier,
                         "near_zero_fraction": s.near_zero_fraction, "seconds": seconds})
            surfaces[f"{recipe}/{method}"] = s.to_json()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "surfaces": surfaces}, f)


if __name__ == "__main__":
    main()
