"""Model tables for the Models page: the zoo's manifest and the user's own models."""

from __future__ import annotations

import pandas as pd

from symalign.errors import SymalignError
from symalign.workspace import available_models
from symalign.zoo import manifest


def zoo_table() -> pd.DataFrame:
    rows = [{"model": f"zoo:{m['recipe']}/{m['seed']}", "data": m["data"], "eval loss": m["eval_loss"],
             "eval accuracy": m["eval_accuracy"], "eval examples": m["eval_examples"], "steps": m["steps"],
             "train seconds": m["train_seconds"], "command": m["command"]} for m in manifest()["models"]]
    return pd.DataFrame(rows)


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
