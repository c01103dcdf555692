"""Group algebra on real tensors of every family: inverse restores, composition equals sequential
application, and transforms survive a safetensors round trip. Each family is given the widest
classes its spec admits of the ones named here (SymmetrySpec.fit: rotary QK maps under RoPE,
permutations of a post-LN residual or of a gated MLP)."""

from __future__ import annotations

import torch

from symalign.models import canonicalize, spec_of, transformed
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import Transform

ALL = {"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "orthogonal", "residual": "orthogonal"}
RELU = dict(ALL, mlp="scaled_perm")


def max_diff(a, b) -> float:
    return max((a.tensors[k] - b.tensors[k]).abs().max().item() for k in a.tensors)


def test_inverse_restores_state_dict(model):
    model = canonicalize(model)
    spec = spec_of(model)
    for classes in (ALL, RELU, {"qk": "rescale", "vo": "invertible", "heads": "perm"}):
        t = random_transform(spec, spec.fit(classes), seed=1)
        back = transformed(transformed(model, t), t.inverse(spec))
        assert max_diff(back, model) < 1e-5
        assert max_diff(transformed(model, t), model) > 0.1


def test_composition_matches_sequential_application(model):
    model = canonicalize(model)
    spec = spec_of(model)
    t1 = random_transform(spec, spec.fit(RELU), seed=2)
    t2 = random_transform(spec, spec.fit(ALL), seed=3)
    sequential = transformed(transformed(model, t1), t2)
    composed = transformed(model, t2.compose(t1, spec))
    assert max_diff(sequential, composed) < 1e-5
    # compose with the inverse is the identity
    assert max_diff(transformed(model, t1.inverse(spec).compose(t1, spec)), model) < 1e-5


def test_transform_roundtrips_through_safetensors(model, tmp_path):
    model = canonicalize(model)
    spec = spec_of(model)
    t = random_transform(spec, spec.fit(RELU), seed=4)
    t.save(tmp_path / "t.safetensors")
    loaded = Transform.load(tmp_path / "t.safetensors")
    assert loaded.classes() == t.classes()
    assert max_diff(transformed(model, loaded), transformed(model, t)) == 0.0


def test_permutation_is_exact(model):
    """Permutations move weights without any arithmetic: the result is bitwise a reordering."""
    spec = spec_of(model)
    t = random_transform(spec, {"mlp": "perm", "heads": "perm", "residual": "perm"}, seed=5)
    moved = transformed(model, t)
    for name in model.tensors:
        assert torch.equal(torch.sort(moved.tensors[name].flatten()).values,
                           torch.sort(model.tensors[name].flatten()).values)


def test_a_transform_moves_between_devices_whole(model):
    """A matcher that ran on a GPU hands back CPU elements: `to` must move every tensor of every element
    kind (the meta device stands in for a GPU here) and keep the kinds."""
    spec = spec_of(canonicalize(model))
    t = random_transform(spec, spec.fit(RELU), seed=6)
    moved = t.to("meta")
    assert moved.classes() == t.classes()
    kinds = set()
    for name, element in moved.items():
        kinds.add(type(element).__name__)
        assert element.tensors() and all(v.device.type == "meta" for v in element.tensors().values()), name
        assert {k: v.shape for k, v in element.tensors().items()} == {k: v.shape for k, v in t[name].tensors().items()}
    assert kinds >= {"Permutation", "Dense"}
    assert ("ScaledPermutation" in kinds) == (spec.fit(RELU)["mlp"] == "scaled_perm")
    assert all(v.device.type == "cpu" for el in t.values() for v in el.tensors().values())  # the original stays
