"""Architecture adapters: load, canonicalise, transform and export Hugging Face models."""

from __future__ import annotations

import torch

from symalign.models.canonical import admits_residual_rotation, canonical_form_gaps, canonicalize, is_canonical
from symalign.models.family import Family, TransformerModel
from symalign.models.functional import logits_of
from symalign.models.io import FAMILIES, load_model, save_model, supported
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply


def spec_of(model: TransformerModel) -> SymmetrySpec:
    """The model's symmetry spec; residual rotations are admissible only where every norm lets them
    pass (γ constant, β along 1: canonical form, or a fresh model's γ = 1, β = 0)."""
    return model.family.spec(model.config, canonical=admits_residual_rotation(model))


def transformed(model: TransformerModel, transform: Transform, consume: bool = False) -> TransformerModel:
    """The same function re-expressed by `transform` (refused with a reason if inadmissible).
    `consume`: `model` is handed over and emptied tensor by tensor as the new one is built."""
    return model.with_tensors(apply(model.tensors, spec_of(model), transform, consume))


def outputs(model: TransformerModel, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The model's logits on `inputs` (a fresh weightless module each call: nothing cached is mutated,
    and a real-size model's weights are not copied)."""
    return logits_of(model, inputs)


def random_inputs(model: TransformerModel, n: int = 4, seed: int = 0) -> dict[str, torch.Tensor]:
    return model.family.random_inputs(model.config, n, torch.Generator().manual_seed(seed))


__all__ = [
    "FAMILIES", "Family", "TransformerModel", "admits_residual_rotation", "canonical_form_gaps", "canonicalize",
    "is_canonical", "load_model", "outputs",
    "random_inputs", "save_model", "spec_of", "supported", "transformed",
]
