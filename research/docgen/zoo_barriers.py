"""Barriers between zoo seeds for each matcher setting: the table in the README.

    python -m research.docgen.zoo_barriers [--recipes vit-digits gpt-shakespeare llama-shakespeare]
                                           [--pairs 0,1 0,2 1,2]
                                      [--steps N] [--threads 2] [--json FILE]

Prints a markdown row per recipe, pair and setting (barrier, barrier above the mean endpoint loss,
loss at λ = 0.5, seconds of alignment), then the summary the README shows: mean ± std over the
pairs of the barrier and of the loss at λ = 0.5."""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model
from symalign.models.io import default_data_spec

PERMS = {"mlp": "perm", "heads": "perm"}
FULL = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}
SETTINGS = [
    ("none", "none", {}),
    ("weight (permutations)", "weight", PERMS),
    ("weight (+ within-head orthogonal)", "weight", dict(PERMS, qk="orthogonal", vo="orthogonal")),
    ("weight (+ residual orthogonal)", "weight", FULL),
    ("activation (all; residual from hidden states)", "activation", FULL),
    ("learned (permutations)", "learned", PERMS),
    ("learned (all)", "learned", FULL),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", nargs="*", default=["vit-digits", "gpt-shakespeare"],
                        help="zoo recipes (also llama-shakespeare, bert-shakespeare, pythia-shakespeare: "
                             "their own README tables)")
    parser.add_argument("--pairs", nargs="*", default=["0,1", "0,2", "1,2"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None,
                        help="learned: most steps (default: the data's, 600)")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}")
    rows = []
    print("| recipe | pair | alignment | barrier | barrier (vs mean) | loss at λ=0.5 | align s |")
    print("|---|---|---|---|---|---|---|")
    for recipe in args.recipes:
        for pair in args.pairs:
            i, j = pair.split(",")
            a, b = load_model(f"zoo:{recipe}/{i}"), load_model(f"zoo:{recipe}/{j}")
            spec = default_data_spec(a)
            data = load_data(spec)
            for label, method, classes in SETTINGS:
                start = time.perf_counter()
                # fitted to the family: under RoPE the orthogonal QK maps become rotary ones (SymmetrySpec.fit)
                fitted = a.family.spec(a.config, canonical=True).fit(classes)
                config = AlignConfig(method=method, classes=fitted, data=spec, steps=args.steps)
                aligned = align(a, b, config).aligned
                seconds = time.perf_counter() - start
                curve = interpolation_curve(a, aligned, data)
                row = {"recipe": recipe, "pair": pair, "alignment": label, "barrier": curve.barrier,
                       "barrier_mean": curve.barrier_mean, "mid": curve.loss[len(curve.loss) // 2],
                       "seconds": seconds, "loss": curve.loss}
                rows.append(row)
                print(f"| {recipe} | {pair} | {label} | {row['barrier']:.3f} | {row['barrier_mean']:.3f} | "
                      f"{row['mid']:.3f} | {seconds:.1f} |", flush=True)
    print("\n| alignment | " + " | ".join(f"{r} barrier | {r} loss at λ = 0.5" for r in args.recipes) + " |")
    print("|---|" + "---|---|" * len(args.recipes))
    for label, _, _ in SETTINGS:
        cells = []
        for recipe in args.recipes:
            mine = [r for r in rows if r["recipe"] == recipe and r["alignment"] == label]
            for key in ("barrier", "mid"):
                values = [r[key] for r in mine]
                spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
                cells.append(f"{statistics.mean(values):.2f}{spread}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
