"""Short names of models and pairs for labels, legends and axes: `zoo:vit-digits/0 ↔ zoo:vit-digits/1`
reads as `vit-digits 0↔1` (issue #56: series named "vanilla [4b6881]" said nothing of the models)."""

from __future__ import annotations


def model_name(ref: str) -> str:
    """A model's short name: zoo:RECIPE/SEED as RECIPE/SEED, a directory by its last two parts."""
    from pathlib import PurePath

    if ref.startswith("zoo:"):
        return ref.removeprefix("zoo:")
    parts = PurePath(ref).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else ref


def shared_recipe(models: list[str]) -> str | None:
    """The recipe every model is a seed of (zoo:vit-digits/0 and /1: vit-digits), else None."""
    names = [model_name(m) for m in models]
    heads = {n.rsplit("/", 1)[0] for n in names}
    return heads.pop() if len(heads) == 1 and all("/" in n for n in names) else None


def pair_label(models: list[str]) -> str:
    """Models as one short label: 'vit-digits 0↔1' when they share a recipe, else their short names."""
    recipe = shared_recipe(models)
    if recipe is not None:
        return f"{recipe} " + "↔".join(model_name(m).rsplit("/", 1)[1] for m in models)
    return " ↔ ".join(model_name(m) for m in models)
