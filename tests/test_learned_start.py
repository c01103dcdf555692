"""Where learned matching starts (issue #29): weight matching's transform, or permutations read off
activations with the continuous maps solved around them, whichever the fixed check prefers."""

from __future__ import annotations

import pytest
import torch

from symalign.data import load_data
from symalign.match.activation.matching import activation_match
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, PRESET_HELP, AlignConfig
from symalign.match.learned.optimisation import LearnedOptions, learned_match
from symalign.match.learned.start import activation_permutation_start
from symalign.match.matchers import MatchInputs
from symalign.match.weight.descent import boundary_tensors, distance, weight_match
from symalign.models import canonicalize, load_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.groups import Permutation
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import Transform

ALL = CLASS_PRESETS["all"]


def _mlps(transform: Transform) -> list[str]:
    return [n for n in transform if n.endswith(".mlp")]


def test_weight_matching_keeps_fixed_spaces_and_solves_the_others_around_them():
    a = canonicalize(random_model(tiny_config("gpt2", tied=False, layers=2, width=32), seed=0))
    spec = spec_of(a)
    b = transformed(a, random_transform(spec, ALL, seed=1))
    full, _ = weight_match(a.tensors, b.tensors, spec, ALL, boundary_tensors(a))
    mlps = _mlps(full)
    assert mlps and distance(a.tensors, transformed(b, full).tensors) < 1e-4
    # the right MLP permutations held: the rest is found and the planted transform undone
    held = Transform({n: full[n] for n in mlps})
    solved, _ = weight_match(a.tensors, b.tensors, spec, ALL, boundary_tensors(a), init=held, fixed=frozenset(mlps))
    assert all(torch.equal(solved[n].perm, full[n].perm) for n in mlps)
    assert distance(a.tensors, transformed(b, solved).tensors) < 1e-4
    # wrong ones held: they stay as given, so the weights cannot meet
    wrong = Transform({n: Permutation(torch.arange(full[n].size)) for n in mlps})
    stuck, _ = weight_match(a.tensors, b.tensors, spec, ALL, boundary_tensors(a), init=wrong, fixed=frozenset(mlps))
    assert all(torch.equal(stuck[n].perm, wrong[n].perm) for n in mlps)
    assert distance(a.tensors, transformed(b, stuck).tensors) > 0.1


def _inputs(recipe: str, data: str) -> MatchInputs:
    a, b = canonicalize(load_model(f"zoo:{recipe}/0")), canonicalize(load_model(f"zoo:{recipe}/1"))
    spec = spec_of(b)
    config = AlignConfig(method="learned", preset="all", data=data).for_spec(spec)
    return MatchInputs(a, b, spec, {k: c for k, c in config.classes.items() if c != "none"}, config, "cpu")


@pytest.mark.slow
def test_the_activation_start_takes_its_permutations_from_activations():
    inputs = _inputs("gpt-shakespeare", "shakespeare")
    data = load_data("shakespeare")
    start = activation_permutation_start(inputs, data).transform
    perms = activation_match(inputs.a, inputs.b, inputs.spec, {"mlp": "perm", "heads": "perm"}, data)
    assert set(perms) <= set(start) and all(torch.equal(start[n].perm, perms[n].perm) for n in perms)
    weight, _ = weight_match(inputs.a.tensors, inputs.b.tensors, inputs.spec, inputs.classes,
                             boundary_tensors(inputs.a))
    assert any(not torch.equal(start[n].perm, weight[n].perm) for n in _mlps(weight))  # another start indeed
    assert "residual" in start and "layer.0.qk" in start  # the continuous maps were solved around them


@pytest.mark.slow
def test_learning_begins_from_the_start_the_check_prefers():
    inputs = _inputs("gpt-shakespeare", "shakespeare")
    data = load_data("shakespeare")
    weight, _ = weight_match(inputs.a.tensors, inputs.b.tensors, inputs.spec, inputs.classes,
                             boundary_tensors(inputs.a))
    other = activation_permutation_start(inputs, data).transform
    options = LearnedOptions(steps=2, check_every=1, patience=100)
    one = learned_match(inputs.a, inputs.b, inputs.spec, weight, inputs.classes, data, options, alternatives=[other])
    two = learned_match(inputs.a, inputs.b, inputs.spec, other, inputs.classes, data, options, alternatives=[weight])
    checks = one.summary["start_checks"]
    assert len(checks) == 2 and checks[0] != checks[1]
    assert two.summary["start_checks"] == checks[::-1]  # the same two starts, offered the other way round
    better = min(range(2), key=checks.__getitem__)
    assert one.summary["start"] == better and two.summary["start"] == 1 - better
    assert one.summary["start_check"] == min(checks) == two.summary["start_check"]
    chosen = [weight, other][better]
    assert all(torch.equal(one.transforms[0][n].perm, chosen[n].perm) for n in _mlps(chosen))


def test_the_full_preset_fits_each_family():
    """`full` asks for invertible maps inside heads: GPT-2 takes them, RoPE's QK maps fall back to
    rotary ones (the widest it admits), and `all` is unchanged (rotations inside heads)."""
    gpt2 = spec_of(canonicalize(random_model(tiny_config("gpt2", layers=1, width=16), seed=0)))
    llama = spec_of(canonicalize(random_model(tiny_config("llama", layers=1, width=16, heads=2), seed=0)))
    assert {k: AlignConfig(preset="full").for_spec(gpt2).classes[k] for k in ("qk", "vo", "residual")} == \
        {"qk": "invertible", "vo": "invertible", "residual": "orthogonal"}
    assert AlignConfig(preset="full").for_spec(llama).classes["qk"] == "rotary"
    assert AlignConfig(preset="full").for_spec(llama).classes["vo"] == "invertible"
    assert AlignConfig(preset="all").for_spec(gpt2).classes["qk"] == "orthogonal"
    assert set(PRESET_HELP) == set(CLASS_PRESETS)  # every preset button says what it is for


@pytest.mark.slow
def test_invertible_head_maps_are_learned_from_weight_matchings_rotations():
    """Learning invertible head maps starts from the rotations weight matching finds (Procrustes),
    not from its least-squares invertible fit, then leaves the rotations; B's function is kept."""
    a, b = load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1")
    result = align(a, b, AlignConfig(method="learned", preset="full", data="shakespeare", steps=8))
    rotations = align(a, b, AlignConfig(method="weight", preset="all")).transform
    heads = [n for n in result.transform if n.endswith((".qk", ".vo"))]
    assert heads
    for name in heads:
        start, learned = result.start[name], result.transform[name]
        assert start.kind == "orthogonal" and learned.kind == "invertible"
        assert torch.allclose(start.dense(), rotations[name].dense(), atol=1e-8)
        g = learned.dense()
        eye = torch.eye(g.shape[-1], dtype=g.dtype).expand_as(g)
        assert (g.mT @ g - eye).abs().max() > 1e-4  # no longer a rotation
    assert result.report.function_gap_vs_b < 1e-3
    summary = result.report.learned_summary
    assert summary.best_check <= summary.start_check
