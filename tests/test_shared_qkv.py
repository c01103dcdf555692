"""One permutation per head for Q, K and V (`--shared-qkv`: TransFusion's P_attn, Verma & Elbayad's P_MHA) in
weight matching (issue #107): the QK and VO maps it finds are one and the same, B keeps its function, a planted
shared permutation is recovered, and a choice it cannot take is refused in one line."""

from __future__ import annotations

import pytest
import torch

from symalign.errors import SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.weight.descent import boundary_tensors, distance, weight_match
from symalign.models import canonicalize, outputs, random_inputs, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform

PERMUTATIONS = {"mlp": "perm", "heads": "perm", "qk": "perm", "vo": "perm", "residual": "perm"}


def test_the_shared_map_moves_q_k_and_v_together_and_keeps_bs_function():
    a, b = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=0)), \
        canonicalize(random_model(tiny_config("gpt2", tied=False), seed=1))
    config = AlignConfig.from_options({"shared_qkv": True}, method="weight", classes=PERMUTATIONS)
    result = align(a, b, config)
    layers = [n.rsplit(".", 1)[0] for n in result.transform if n.endswith(".qk")]
    assert layers
    for layer in layers:
        assert torch.equal(result.transform[f"{layer}.qk"].dense(), result.transform[f"{layer}.vo"].dense())
    separate = align(a, b, AlignConfig(method="weight", classes=PERMUTATIONS)).transform
    assert any(not torch.equal(separate[f"{n}.qk"].dense(), separate[f"{n}.vo"].dense()) for n in layers), \
        "separate QK and VO solves must differ somewhere, or the test shows nothing"
    x = random_inputs(b, n=4)
    assert float((outputs(b, x) - outputs(transformed(b, result.transform), x)).abs().max()) < 1e-4


def test_a_planted_shared_permutation_is_recovered():
    a = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=3))
    spec = spec_of(a)
    active = {k: c for k, c in spec.fit(PERMUTATIONS).items() if c != "none"}
    planted = random_transform(spec, active, seed=5)
    for name in [n for n in planted if n.endswith(".vo")]:
        planted[name] = planted[name.removesuffix(".vo") + ".qk"]  # one permutation for Q, K and V
    b = transformed(a, planted)
    assert distance(a.tensors, b.tensors) > 0.5  # the plant moved the weights
    transform, _ = weight_match(a.tensors, dict(b.tensors), spec, active, boundary_tensors(a), shared_qkv=True)
    assert distance(a.tensors, transformed(b, transform).tensors) < 1e-6


def test_a_shared_map_needs_permutations_inside_heads():
    a = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=0))
    with pytest.raises(SymalignError, match="needs the qk and vo classes both perm; got qk orthogonal"):
        weight_match(a.tensors, dict(a.tensors), spec_of(a), {**PERMUTATIONS, "qk": "orthogonal"},
                     boundary_tensors(a), shared_qkv=True)
