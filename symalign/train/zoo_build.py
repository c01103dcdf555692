"""The zoo's build side: train each recipe for each seed into assets/zoo and record it in the
manifest (symalign.zoo is the read side)."""

from __future__ import annotations

import json

from symalign.train.loop import recipe_named, train
from symalign.zoo import add_entry, zoo_dir


def build(recipes: list[str], seeds: list[int] | None = None, progress=None) -> list[dict]:
    """Train each recipe for each seed (default: the recipe's own seeds) into the zoo and record it."""
    records = []
    for recipe in recipes:
        for seed in seeds if seeds is not None else recipe_named(recipe).seeds:
            folder = zoo_dir() / recipe / str(seed)
            record = train(recipe, seed, folder, progress=progress)
            record["command"] = f"symalign train {recipe} --seed {seed} --out assets/zoo/{recipe}/{seed}"
            (folder / "training.json").write_text(json.dumps(record, indent=2))
            add_entry(record, folder)
            records.append(record)
    return records
