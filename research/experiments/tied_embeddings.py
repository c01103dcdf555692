"""Tied against untied embeddings under learned matching (issue #59's first finding).

    python -m research.experiments.tied_embeddings [--recipe gpt-shakespeare] [--cache DIR] [--pairs 0-1 0-2 1-2]

Trains the zoo recipe with `tied=True` (seeds 0, 1, 2; the same trainer, data, steps and seeds as
the zoo's untied models; cached in DIR), then hands every seed pair, tied and untied (the zoo's own
models), to learned_levers.py's `default` lever: the vanilla barrier, weight matching's (all
classes) and learned matching's at its defaults (all classes, seed 0), each on the evaluation split
at 21 points, with the share of the vanilla barrier closed and the seconds learned matching took.
About 20 minutes on 2 cores (text's default became 600 learned steps with issue #59)."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from research.experiments import learned_levers
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="gpt-shakespeare")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "symalign" / "tied")
    parser.add_argument("--pairs", nargs="*", default=["0-1", "0-2", "1-2"])
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (learned_levers.py --jobs)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per run")
    args = parser.parse_args()
    pairs = [tuple(int(s) for s in p.split("-")) for p in args.pairs]
    tied = tied_models(args.recipe, args.cache, {s for p in pairs for s in p})
    data_spec = RECIPES[args.recipe].data
    zoo = {s: f"zoo:{args.recipe}/{s}" for s in tied}
    specs = [f"paths:{models[i]},{models[j]},{data_spec}" for i, j in pairs for models in (zoo, tied)]
    # the measuring (vanilla, weight (all), learned at its defaults) is learned_levers.py's `default` lever
    learned_levers.main(["--pairs", *specs, "--levers", "default", "--jobs", str(args.jobs),
                         "--threads", str(args.threads)])


if __name__ == "__main__":
    main()
