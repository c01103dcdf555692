"""Eigen-angles of learned corrections on the zoo pairs: the README's spectra table.

    python -m research.docgen.zoo_spectra [--recipes vit-digits gpt-shakespeare] [--pairs 0,1 0,2 1,2] [--threads 2]

For each pair, learned matching with all classes (what `symalign align A B --method learned
--classes all` does), then `symalign spectrum` on its output: the median eigen-angle per component
kind and the share below 0.1 rad, and the permutation stability per kind (MLP units, heads).
Ends with mean ± std over the pairs."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from symalign.landscape.spectrum import alignment_spectrum
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import load_model
from symalign.models.io import default_data_spec

COLUMNS = ["residual median", "qk median", "vo median", "share < 0.1", "MLP kept", "heads kept"]


def summarize(result: dict) -> dict:
    s = result["summary"]
    total = sum(v["count"] for v in s.values())
    stab = result["permutation_stability"]
    mean = lambda kind: statistics.mean(v for k, v in stab.items() if k.endswith(f".{kind}"))
    return {"residual median": s["residual"]["median"], "qk median": s["qk"]["median"], "vo median": s["vo"]["median"],
            "share < 0.1": sum(v["share_below_0.1"] * v["count"] for v in s.values()) / total,
            "MLP kept": mean("mlp"), "heads kept": mean("heads")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", nargs="*", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--pairs", nargs="*", default=["0,1", "0,2", "1,2"])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}; learned matching, all classes, default settings")
    print("| recipe | pair | " + " | ".join(COLUMNS) + " | align s |")
    print("|---|---|" + "---|" * (len(COLUMNS) + 1))
    for recipe in args.recipes:
        table = []
        for pair in args.pairs:
            i, j = pair.split(",")
            a, b = load_model(f"zoo:{recipe}/{i}"), load_model(f"zoo:{recipe}/{j}")
            config = AlignConfig(method="learned", classes=CLASS_PRESETS["all"], data=default_data_spec(a))
            start = time.perf_counter()
            result = align(a, b, config)
            seconds = time.perf_counter() - start
            with tempfile.TemporaryDirectory() as tmp:
                row = summarize(alignment_spectrum(result.save(tmp)))
            table.append(row)
            print(f"| {recipe} | {i}↔{j} | " + " | ".join(f"{row[c]:.3f}" for c in COLUMNS) + f" | {seconds:.0f} |",
                  flush=True)
        if len(table) > 1:
            cells = [f"{statistics.mean(r[c] for r in table):.3f} ± {statistics.stdev(r[c] for r in table):.3f}"
                     for c in COLUMNS]
            print(f"| {recipe} | mean ± std | " + " | ".join(cells) + " | |")


if __name__ == "__main__":
    main()
