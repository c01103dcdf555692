"""Barriers between models of different widths: the README's width-heterogeneous table.

    python -m research.docgen.zoo_widths [--narrow vit-digits-narrow] [--wide vit-digits]
                                    [--pairs 0,1 1,2 2,0] [--steps N] [--threads 2] [--json FILE]

Each pair is (narrow seed i, wide seed j): the narrow model is embedded in the wide one's basis
(same function, symalign.models.widen) and the wide model is aligned to it. Prints a row per pair
and setting (barrier, barrier above the mean endpoint loss, loss at λ = 0.5, both endpoints' loss
and accuracy), then mean ± std over the pairs."""

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

SETTINGS = [
    ("none (embedded only)", "none", {}),
    ("weight (permutations)", "weight", CLASS_PRESETS["permutations"]),
    ("weight (all)", "weight", CLASS_PRESETS["all"]),
    ("learned (all)", "learned", CLASS_PRESETS["all"]),
]


def mean_std(values: list[float]) -> str:
    spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.2f}{spread}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--narrow", default="vit-digits-narrow")
    parser.add_argument("--wide", default="vit-digits")
    parser.add_argument("--pairs", nargs="*", default=["0,1", "1,2", "2,0"], help="narrow seed,wide seed")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="learned: most steps (default: the data's)")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}")
    print("| pair (narrow, wide) | alignment | barrier | barrier (vs mean) | loss at λ=0.5 | endpoint loss | "
          "endpoint acc | align s |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for pair in args.pairs:
        i, j = pair.split(",")
        narrow, wide = load_model(f"zoo:{args.narrow}/{i}"), load_model(f"zoo:{args.wide}/{j}")
        spec = default_data_spec(wide)
        data = load_data(spec)
        for label, method, classes in SETTINGS:
            start = time.perf_counter()
            aligned = align(narrow, wide, AlignConfig(method=method, classes=classes, data=spec,
                                                      steps=args.steps)).aligned
            seconds = time.perf_counter() - start
            curve = interpolation_curve(narrow, aligned, data)
            row = {"pair": pair, "alignment": label, "barrier": curve.barrier, "barrier_mean": curve.barrier_mean,
                   "mid": curve.loss[len(curve.loss) // 2], "endpoint_loss": curve.endpoint_loss,
                   "endpoint_accuracy": curve.endpoint_accuracy, "seconds": seconds, "loss": curve.loss}
            rows.append(row)
            el, ea = curve.endpoint_loss, curve.endpoint_accuracy
            print(f"| {pair} | {label} | {row['barrier']:.3f} | {row['barrier_mean']:.3f} | {row['mid']:.3f} | "
                  f"{el[0]:.3f}, {el[1]:.3f} | {ea[0]:.3f}, {ea[1]:.3f} | {seconds:.1f} |", flush=True)
    print(f"\n| alignment ({args.narrow} into {args.wide}) | barrier | loss at λ = 0.5 |")
    print("|---|---|---|")
    for label, _, _ in SETTINGS:
        mine = [r for r in rows if r["alignment"] == label]
        print(f"| {label} | {mean_std([r['barrier'] for r in mine])} | {mean_std([r['mid'] for r in mine])} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
