"""The canonical form keeps the function, is idempotent, and unlocks residual rotations."""

from __future__ import annotations

import pytest
import torch

from symalign.errors import InadmissibleError
from symalign.models import canonicalize, is_canonical, outputs, random_inputs, spec_of, transformed
from symalign.models.tiny import initialised_model, random_model, tiny_config
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


# Issue #53: a model as transformers initialises it has γ = 1 and β = 0 exactly, but random readers and
# writers. Before the fix canonicalize() returned it as it was (a shortcut trusted γ and β alone).
FRESH_FAMILIES = ["gpt2", "gpt_neox", "vit", "llama", "bert"]


def ones_fraction(t: torch.Tensor, axis: int) -> float:
    """The share of ‖t‖ along the all-ones direction of `axis` (computed here, not by the package)."""
    t = t.double()
    along = t.sum(dim=axis) / t.shape[axis] ** 0.5
    return float(along.norm() / t.norm()) if t.norm() > 0 else 0.0  # a zero bias is centred


def residual_axes(model, variance: str) -> dict[str, list[int]]:
    """Tensors with a residual axis of `variance` (co: writers; contra: readers), LayerNorm biases aside."""
    out = {}
    for name, tags in spec_of(model).tensors.items():
        axes = [i for i, tag in enumerate(tags) if tag and tag.space == "residual" and tag.variance == variance]
        if axes and not (name.endswith(".bias") and ("ln" in name or "norm" in name)):
            out[name] = axes
    return out


@pytest.mark.parametrize("family", FRESH_FAMILIES)
def test_a_freshly_initialised_model_is_brought_to_canonical_form(family):
    fresh = initialised_model(tiny_config(family, tied=False), seed=1)
    norms = [n for n in fresh.tensors if n.endswith(("ln1.weight", "ln2.weight", "norm.weight"))]
    assert norms and all(bool((fresh.tensors[n] == 1).all()) for n in norms), "the case needs γ = 1 exactly"
    once = canonicalize(fresh)
    twice = canonicalize(once)
    x = random_inputs(fresh, n=3, seed=2)
    reference = outputs(fresh, x)
    assert (outputs(once, x) - reference).abs().max().item() < 1e-5 * max(1.0, reference.abs().max().item())
    assert max((twice.tensors[k] - once.tensors[k]).abs().max().item() for k in once.tensors) <= 1e-7
    if fresh.dims.norm != "layernorm":  # RMSNorm: nothing to project; post-LN: nothing to absorb
        assert is_canonical(once)
        return
    assert not is_canonical(fresh) and is_canonical(once)
    readers, writers = residual_axes(fresh, "contra"), residual_axes(fresh, "co")
    assert max(ones_fraction(fresh.tensors[n], a) for n, axes in readers.items() for a in axes) > 0.05
    for variance, tensors in (("reader", readers), ("writer", writers)):
        for name, axes in tensors.items():
            for axis in axes:
                assert ones_fraction(once.tensors[name], axis) <= 1e-6, (variance, name)


def test_a_canonical_model_is_returned_as_it_is_and_a_perturbed_one_is_not():
    """The shortcut stays where it is exact: canonical output comes back untouched (no copy), but a
    canonical model whose one reader gained a ones component is projected again."""
    once = canonicalize(initialised_model(tiny_config("gpt2", tied=False), seed=3))
    assert canonicalize(once) is once
    tensors = dict(once.tensors)
    tensors["layer.1.mlp.fc.weight"] = tensors["layer.1.mlp.fc.weight"] + 0.01
    perturbed = once.with_tensors(tensors)
    assert not is_canonical(perturbed)
    again = canonicalize(perturbed)
    assert again is not perturbed and ones_fraction(again.tensors["layer.1.mlp.fc.weight"], -1) <= 1e-6


def test_a_verified_model_is_not_checked_again_until_a_tensor_or_the_config_changes(monkeypatch):
    """`is_canonical` remembers a passed check on the model object (a sweep checks the same model many
    times); an in-place edit, a replaced tensor or a changed config key is checked again, and gives the
    verdict a fresh check gives."""
    from symalign.models import canonical
    from symalign.models.loaded import copy_of

    once = canonicalize(initialised_model(tiny_config("gpt2", tied=False), seed=4))
    checks = []
    real = canonical.canonical_form_gaps
    monkeypatch.setattr(canonical, "canonical_form_gaps", lambda m: checks.append(m) or real(m))
    assert is_canonical(once) and is_canonical(once) and canonicalize(once) is once
    assert len(checks) <= 1  # the first call may check; none after it
    copied = copy_of(once)  # the model cache's copy: bit-identical, so the same verdict without a check
    checks.clear()
    assert is_canonical(copied) and checks == []

    edited = copy_of(once)
    edited.tensors["layer.1.mlp.fc.weight"].add_(0.01)  # in place: the tensor's version moves
    assert not is_canonical(edited) and len(checks) == 1
    replaced = dict(once.tensors)
    replaced["layer.0.mlp.proj.bias"] = replaced["layer.0.mlp.proj.bias"] + 0.01  # a writer no longer centred
    assert not is_canonical(once.with_tensors(replaced))
    retied = copy_of(once)
    retied.config.tie_word_embeddings = True  # the config key the check reads
    assert not is_canonical(retied)
    renamed = copy_of(once)
    assert is_canonical(renamed)
    del renamed.tensors["layer.0.mlp.proj.bias"]  # a name gone and its tensor freed, another name in its place:
    renamed.tensors["another"] = torch.zeros(1)  # the stamp no longer holds (and reading it does not fail)
    assert not canonical._still_verified(renamed)
    assert len(checks) == 3 and is_canonical(once)
