"""Tied against untied embeddings under learned matching (issue #59's first finding).

    python benchmarks/tied_embeddings.py [--recipe gpt-shakespeare] [--cache DIR] [--pairs 0-1 0-2 1-2]

Trains the zoo recipe with `tied=True` (seeds 0, 1, 2; the same trainer, data, steps and seeds as
the zoo's untied models; cached in DIR), then prints, for each seed pair, tied and untied (the zoo's
own models): the vanilla barrier, weight matching's (all classes) and learned matching's at its
defaults (all classes, seed 0), each on the evaluation split at 21 points, with the share of the
vanilla barrier closed and the seconds learned matching took. About 10 minutes on 2 cores."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model
from symalign.train.loop import train
from symalign.train.recipes import RECIPES


def tied_models(recipe: str, cache: Path, seeds: set[int]) -> dict[int, str]:
    """The tied twin of `recipe` for each seed, trained into the cache once."""
    base = RECIPES[recipe]
    twin = replace(base, name=f"{base.name}-tied", model={**base.model, "tied": True})
    out = {}
    for seed in sorted(seeds):
        folder = cache / twin.name / str(seed)
        if not (folder / "config.json").is_file():
            begin = time.perf_counter()
            train(twin, seed, folder, device="cpu")
            print(f"trained {twin.name}/{seed} in {time.perf_counter() - begin:.0f} s", flush=True)
        out[seed] = str(folder)
    return out


def row(a_ref: str, b_ref: str, data_spec: str) -> str:
    data = load_data(data_spec)
    a, b = load_model(a_ref), load_model(b_ref)
    vanilla = interpolation_curve(a, b, data, points=21).barrier
    cells = [f"{vanilla:.4f}"]
    for method in ("weight", "learned"):
        begin = time.perf_counter()
        aligned = align(a, b, AlignConfig(method=method, preset="all", data=data_spec, seed=0)).aligned
        seconds = time.perf_counter() - begin
        barrier = interpolation_curve(a, aligned, data, points=21).barrier
        cells.append(f"{barrier:.4f} ({100 * (1 - barrier / vanilla):.1f}%)")
        if method == "learned":
            cells.append(f"{seconds:.0f}")
    return " | ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="gpt-shakespeare")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "symalign" / "tied")
    parser.add_argument("--pairs", nargs="*", default=["0-1", "0-2", "1-2"])
    args = parser.parse_args()
    pairs = [tuple(int(s) for s in p.split("-")) for p in args.pairs]
    tied = tied_models(args.recipe, args.cache, {s for p in pairs for s in p})
    data_spec = RECIPES[args.recipe].data
    print("| pair | embeddings | vanilla | weight (all) | learned (all) | learned s |")
    print("|---|---|---|---|---|---|")
    for i, j in pairs:
        print(f"| {i}↔{j} | untied (zoo) | {row(f'zoo:{args.recipe}/{i}', f'zoo:{args.recipe}/{j}', data_spec)} |",
              flush=True)
        print(f"| {i}↔{j} | tied | {row(tied[i], tied[j], data_spec)} |", flush=True)


if __name__ == "__main__":
    main()
