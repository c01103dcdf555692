"""The canonical form keeps the function, is idempotent, and unlocks residual rotations."""

from __future__ import annotations

import pytest

from symalign.errors import InadmissibleError
from symalign.models import canonicalize, is_canonical, outputs, random_inputs, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform
from tests.conftest import PRE_NORM_FAMILIES, random_configs


@pytest.mark.parametrize("family", ["gpt2", "vit"])
def test_canonical_form_is_function_preserving_and_idempotent(family):
    for i, config in enumerate(random_configs(family, 6, seed=3)):
        model = random_model(config, seed=i)
        assert not is_canonical(model)
        once = canonicalize(model)
        twice = canonicalize(once)
        assert is_canonical(once)
        x = random_inputs(model, n=3, seed=i)
        assert (outputs(once, x) - outputs(model, x)).abs().max().item() < 1e-4
        assert max((twice.tensors[k] - once.tensors[k]).abs().max().item() for k in once.tensors) < 1e-5
        for name, tags in spec_of(once).tensors.items():  # writers are mean-free on the residual axis
            for axis, tag in enumerate(tags):
                if tag and tag.space == "residual" and tag.variance == "co" and not name.endswith(("ln1.bias",
                                                                                                   "ln2.bias",
                                                                                                   "norm.bias")):
                    assert once.tensors[name].mean(dim=axis).abs().max().item() < 1e-5, name


def test_tied_gpt2_is_untied_and_bias_free_vit_gets_biases():
    tied = random_model(tiny_config("gpt2", tied=True), seed=0)
    assert tied.config.tie_word_embeddings
    assert canonicalize(tied).config.tie_word_embeddings is False
    vit = random_model(tiny_config("vit", qkv_bias=False), seed=0)
    assert canonicalize(vit).config.qkv_bias is True


@pytest.mark.parametrize("family", PRE_NORM_FAMILIES)
def test_residual_rotation_refused_before_canonical_form(model):
    spec = spec_of(model)
    with pytest.raises(InadmissibleError, match="canonical"):
        random_transform(spec, {"residual": "orthogonal"})
    canonical = canonicalize(model)
    t = random_transform(spec_of(canonical), {"residual": "orthogonal"}, seed=1)
    with pytest.raises(InadmissibleError, match="canonical"):
        transformed(model, t)  # the same element on the non-canonical model is refused by apply
