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


# Config fields that say where or how a run was executed rather than what it is: runs that differ only
# in these belong to one band (the matcher's seed is one of the draws a band averages over).
RUN_ON = frozenset({"seed", "device", "max_seconds"})


def group_key(run: Run) -> tuple:
    """What a run is: its kind, method, classes, options (its config without RUN_ON), evaluation data,
    model family and λ grid. Not its pair or seeds: those are what a band averages over."""
    config = run.settings.get("config", {})
    classes = run.metrics.get("classes") or config.get("classes")
    options = tuple(sorted((k, repr(v)) for k, v in config.items() if k not in RUN_ON | {"classes"}))
    return (run.kind, run.method, classes_text(classes) if run.kind != "barrier" else "none", options,
            run.settings.get("data"), family_of(run.all_models), tuple(run.curve["lambdas"]))


def seed_pair_groups(runs: list[Run]) -> list[tuple[str, str, list[dict]]]:
    """(label, method, curves) per group of runs with a curve that are the same experiment (group_key) on
    different pairs, in the order the groups first appear; one curve per pair (the first listed, where a
    pair was run twice), so n is the number of pairs. A group of one is kept (its band is a line)."""
    groups: dict[tuple, dict[tuple, Run]] = {}
    for run in runs:
        if not run.curve:
            continue
        groups.setdefault(group_key(run), {}).setdefault(tuple(run.all_models), run)
    out = []
    for (kind, method, classes, _, _, family, _), members in groups.items():
        what = f"{method}: {classes}" if kind != "curve" else f"curve, {method}: {classes}"
        out.append((f"{what} · {family}", method, [r.curve for r in members.values()]))
    return out
