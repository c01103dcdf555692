"""Runs grouped across seed pairs, for mean ± std bands: the same method and classes on pairs of one
model family (zoo:RECIPE/i ↔ zoo:RECIPE/j), measured on one λ grid. A paper shows that band, not
one lucky pair (issue #56)."""

from __future__ import annotations

from symalign.plots.names import model_name, shared_recipe
from symalign.runs.store import Run
from symalign.runs.table import classes_text


def family_of(models: list[str]) -> str:
    """The models' common recipe (zoo:vit-digits/0 and /1: vit-digits), else their short names joined."""
    return shared_recipe(models) or " ↔ ".join(model_name(m) for m in models)


def seed_pair_groups(runs: list[Run]) -> list[tuple[str, str, list[dict]]]:
    """(label, method, curves) per group of runs with a curve that share method, classes, family and λ grid,
    in the order the groups first appear; a group of one is kept (its band is a line)."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        if not run.curve:
            continue
        classes = run.metrics.get("classes") or run.settings.get("config", {}).get("classes")
        key = (run.method, classes_text(classes) if run.kind != "barrier" else "none", family_of(run.all_models),
               tuple(run.curve["lambdas"]))
        groups.setdefault(key, []).append(run)
    return [(f"{method}: {classes} · {family}", method, [r.curve for r in members])
            for (method, classes, family, _), members in groups.items()]
