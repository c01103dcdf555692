"""Why weight matching closes less than activation matching on vit-digits (issue #54, item 5).

    python -m research.experiments.vit_weight_vs_activation [--pairs 0-1 0-2 1-2] [--wide] [--max-examples N]

On each seed pair of vit-digits (and with --wide, seeds 0 ↔ 1 of vit-digits-w128, the same recipe at
twice the width): the barrier after vanilla, activation (all), weight (all), Git Re-Basin's own
objective (weight matching of permutations only: MLP units, heads and a residual permutation), and
the residual start (activation matching's residual map, then weight matching of every other class
in that basis). Then, after weight and after activation matching, where the barrier is left
(symalign.landscape.attribution: the mean rise when one parameter group moves halfway) for the
three groups that hold most, and the residual map's distance to the identity-free comparison:
how far weight's and activation's residual maps are from each other (‖Q_w − Q_a‖_F / √d: 0 for the
same map, about √2 for unrelated rotations)."""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from symalign.data import load_data
from symalign.landscape.attribution import attribute
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig, preset_classes
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec

GIT_REBASIN = {"mlp": "perm", "heads": "perm", "residual": "perm"}
ALL_BUT_RESIDUAL = {k: v for k, v in preset_classes("all").items() if k != "residual"} | {"residual": "none"}


def aligned(a, b, method: str, classes: dict, data: str):
    config = AlignConfig(method=method, classes={**preset_classes("none"), **classes}, data=data)
    return align(a, b, config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=["0-1", "0-2", "1-2"])
    parser.add_argument("--wide", action="store_true", help="also seeds 0 ↔ 1 of vit-digits-w128")
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--attribute-examples", type=int, default=256)
    args = parser.parse_args()
    pairs = [("vit-digits", *map(int, p.split("-"))) for p in args.pairs]
    if args.wide:
        pairs.append(("vit-digits-w128", 0, 1))
    table = []
    for family, i, j in pairs:
        began = time.perf_counter()
        a = canonicalize(load_model(f"zoo:{family}/{i}"))
        b = canonicalize(load_model(f"zoo:{family}/{j}"))
        spec = default_data_spec(a)
        data = load_data(spec)

        def barrier(model, a=a, data=data):
            return interpolation_curve(a, model, data, max_examples=args.max_examples).barrier

        weight = aligned(a, b, "weight", preset_classes("all"), spec)
        activation = aligned(a, b, "activation", preset_classes("all"), spec)
        rebasin = aligned(a, b, "weight", GIT_REBASIN, spec)
        residual_first = aligned(a, b, "activation", {"residual": "orthogonal"}, spec)
        residual_start = aligned(a, residual_first.aligned, "weight", ALL_BUT_RESIDUAL, spec)
        row = {"pair": f"{family} {i}↔{j}", "vanilla": barrier(b), "activation (all)": barrier(activation.aligned),
               "weight (all)": barrier(weight.aligned), "Git Re-Basin (permutations + residual perm)":
               barrier(rebasin.aligned), "residual from activation, rest by weight": barrier(residual_start.aligned)}
        qw, qa = weight.transform["residual"].dense(), activation.transform["residual"].dense()
        row["residual maps apart"] = float(torch.linalg.norm(qw - qa) / math.sqrt(qw.shape[0]))
        for name, result in (("weight", weight), ("activation", activation)):
            _, groups = attribute(a, result.aligned, data, points=3, max_examples=args.attribute_examples)
            row[f"top groups after {name}"] = ", ".join(f"{g.group} {g.mean:+.2f}" for g in groups[:3])
        row["seconds"] = time.perf_counter() - began
        table.append(row)
        print(row, flush=True)
    numeric = [k for k in table[0] if isinstance(table[0][k], float) and k != "seconds"]
    print("\n| pair | " + " | ".join(numeric) + " |\n|" + "---|" * (len(numeric) + 1))
    for row in table:
        print(f"| {row['pair']} | " + " | ".join(f"{row[k]:.2f}" for k in numeric) + " |")
    zoo = [r for r in table if r["pair"].startswith("vit-digits ")]
    if len(zoo) > 1:
        print("| mean ± std (vit-digits) | " + " | ".join(
            f"{statistics.fmean(r[k] for r in zoo):.2f} ± {statistics.stdev(r[k] for r in zoo):.2f}"
            for k in numeric) + " |")
    for row in table:
        print(f"{row['pair']}: after weight: {row['top groups after weight']}; after activation: "
              f"{row['top groups after activation']}")


if __name__ == "__main__":
    main()
