"""The `average` merge rule on its own: the mean of models already in one basis.

Why its own module: OT fusion's rules (symalign.merge.ot_fusion) carry the members by plans and then
average them, and the merging pipeline (symalign.merge.merging) runs OT fusion; both read the mean
from here, so neither imports the other."""

from __future__ import annotations

import torch

from symalign.merge.rule import MergeInputs
from symalign.models.family import TransformerModel


def average(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `average` rule: the mean of the (aligned) logical tensors."""
    return {n: torch.stack([m.tensors[n].double() for m in members]).mean(0).to(t.dtype)
            for n, t in members[0].tensors.items()}
