"""Model tables for the Models page: the zoo's manifest and the user's own models."""

from __future__ import annotations

import pandas as pd

from symalign.errors import SymalignError
from symalign.workspace import available_models
from symalign.zoo import manifest

TRAIN_COMMAND = "symalign train {recipe} --seed {seed} --out assets/zoo/{recipe}/{seed}"


def zoo_table() -> tuple[pd.DataFrame, str]:
    """The zoo's models and the command that trained them: one template for all when every command follows
    it (a column of near-identical commands would push the table past a 1280-pixel page), else a column."""
    models = manifest()["models"]
    rows = [{"model": f"zoo:{m['recipe']}/{m['seed']}", "data": m["data"], "eval loss": m["eval_loss"],
             "eval accuracy": m["eval_accuracy"], "eval examples": m["eval_examples"], "steps": m["steps"],
             "train seconds": m["train_seconds"]} for m in models]
    if all(m["command"] == TRAIN_COMMAND.format(**m) for m in models):
        return pd.DataFrame(rows), TRAIN_COMMAND.replace("{recipe}", "RECIPE").replace("{seed}", "SEED")
    return pd.DataFrame([{**row, "command": m["command"]} for row, m in zip(rows, models)]), ""


def describe(model) -> str:
    d = model.dims
    return (f"{model.family.model_type}: {d.n_layer} layers, width {d.d_model}, {d.n_head} heads, "
            f"MLP {d.d_mlp} ({d.activation})")


def user_table(load) -> pd.DataFrame:
    """The user's imported, trained and linked models; `load` is the (cached) loader."""
    rows = []
    for entry in available_models():
        if entry.origin == "zoo":
            continue
        try:
            summary = describe(load(entry.ref))
        except SymalignError as exc:
            summary = f"cannot load: {exc}"
        rows.append({"model": entry.label, "path": entry.ref, "origin": entry.origin, "architecture": summary})
    return pd.DataFrame(rows, columns=["model", "path", "origin", "architecture"])
