"""Inadmissible choices are refused, each with the spec's human-readable reason."""

from __future__ import annotations

import pytest
import torch

from symalign.errors import InadmissibleError
from symalign.models import canonicalize, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.groups import Dense, ScaledPermutation
from symalign.symmetry.random import random_orthogonal, random_transform
from symalign.symmetry.transform import Transform
from tests.conftest import LAYERNORM_FAMILIES


@pytest.mark.parametrize("family", ["gpt2", "vit"])
def test_scaled_permutation_on_gelu_is_refused(family):
    spec = spec_of(random_model(tiny_config(family, activation="gelu"), seed=0))
    with pytest.raises(InadmissibleError, match="positively homogeneous"):
        random_transform(spec, {"mlp": "scaled_perm"})
    relu = spec_of(random_model(tiny_config(family, activation="relu"), seed=0))
    random_transform(relu, {"mlp": "scaled_perm"})  # admitted for ReLU


@pytest.mark.parametrize("family", LAYERNORM_FAMILIES)
def test_rotating_mlp_units_or_heads_is_refused(model):
    spec = spec_of(model)
    with pytest.raises(InadmissibleError, match="commutes only with"):
        random_transform(spec, {"mlp": "orthogonal"})
    with pytest.raises(InadmissibleError, match="whole units"):
        random_transform(spec, {"heads": "orthogonal"})
    with pytest.raises(InadmissibleError, match="keep norms"):
        random_transform(spec_of(canonicalize(model)), {"residual": "invertible"})


@pytest.mark.parametrize("family", LAYERNORM_FAMILIES)
def test_hand_built_elements_are_checked(model):
    model = canonicalize(model)
    d = model.dims.d_model
    not_fixing_ones = Dense(random_orthogonal(d, torch.Generator().manual_seed(0)), "orthogonal")
    with pytest.raises(InadmissibleError, match="all-ones"):
        transformed(model, Transform({"residual": not_fixing_ones}))
    fake_orthogonal = Dense(2 * torch.eye(d, dtype=torch.float64), "orthogonal")
    with pytest.raises(InadmissibleError, match="not orthogonal"):
        transformed(model, Transform({"residual": fake_orthogonal}))
    negative = ScaledPermutation(torch.arange(model.dims.d_mlp), -torch.ones(model.dims.d_mlp, dtype=torch.float64))
    with pytest.raises(InadmissibleError):
        transformed(model, Transform({"layer.0.mlp": negative}))
    with pytest.raises(InadmissibleError, match="size"):
        transformed(model, Transform({"layer.0.mlp": ScaledPermutation(torch.arange(3), torch.ones(3))}))
    with pytest.raises(InadmissibleError, match="no component"):
        transformed(model, Transform({"layer.99.mlp": ScaledPermutation(torch.arange(3), torch.ones(3))}))
