"""Which split a curve is measured on (`--split eval|train`): the evaluation split by default, or the
training split, the data the pair was trained on (a zoo recipe's), as the papers also report. A view
of a data source whose evaluation batches are drawn from its training split, in the same fixed way
(the first images, or the first non-overlapping windows), so a train-split curve is deterministic."""

from __future__ import annotations

from dataclasses import replace

from symalign.errors import SymalignError

SPLITS = ("eval", "train")


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise SymalignError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")


def split_view(data, split: str = "eval"):
    """`data` itself for the evaluation split; for the training split, a copy that evaluates there."""
    from symalign.data.base import ImageData

    check_split(split)
    if split == "eval":
        return data
    if isinstance(data, ImageData):
        return replace(data, name=f"{data.name} (train split)", eval_x=data.train_x, eval_y=data.train_y)
    return replace(data, name=f"{data.name} (train split)", eval_part="train")
