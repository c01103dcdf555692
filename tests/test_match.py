"""Matchers on real computation: planted symmetries are recovered, noise degrades recovery
gracefully, outputs keep B's function and load with plain transformers, bad input is refused."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageClassification

from symalign.cli import main
from symalign.errors import ArchitectureMismatchError, InadmissibleError, SymalignError
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.weight.descent import distance
from symalign.models import canonicalize, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform

COMBOS = [
    {"mlp": "perm", "heads": "perm"},
    {"mlp": "scaled_perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal"},
    {"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "invertible"},
    {"mlp": "perm", "heads": "perm", "qk": "rescale", "vo": "rescale", "residual": "perm"},
    {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"},
]


def planted_pair(family: str, classes: dict, seed: int = 0, noise: float = 0.0):
    a = canonicalize(random_model(tiny_config(family, activation="relu", tied=False, layers=2, width=32), seed=seed))
    b = transformed(a, random_transform(spec_of(a), classes, seed=seed + 1))
    if noise:
        g = torch.Generator().manual_seed(seed + 2)
        b = b.with_tensors({k: v + noise * v.std() * torch.randn(v.shape, generator=g) for k, v in b.tensors.items()})
    return a, b


@pytest.mark.parametrize("family", ["gpt2", "vit"])
@pytest.mark.parametrize("classes", COMBOS, ids=lambda c: "+".join(f"{k}={v}" for k, v in c.items()))
def test_weight_matching_recovers_a_planted_transform(family, classes):
    a, b = planted_pair(family, classes)
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert distance(a.tensors, b.tensors) > 0.3, "the planted transform must move the weights"
    assert distance(a.tensors, result.aligned.tensors) < 1e-4
    x = random_inputs(a, n=3)
    assert (outputs(result.aligned, x) - outputs(b, x)).abs().max().item() < 1e-4  # same function as B


def test_planted_barrier_vanishes_after_alignment():
    a, b = planted_pair("vit", COMBOS[-1])
    data = _digits_for(a)
    aligned = align(a, b, AlignConfig(method="weight", classes=COMBOS[-1])).aligned
    assert interpolation_curve(a, aligned, data, points=5).barrier < 1e-3


def _digits_for(model):
    from symalign.data import load_data

    return load_data("digits")


def test_recovery_degrades_gracefully_with_noise():
    errors = []
    for noise in (0.0, 0.01, 0.05):
        a, b = planted_pair("gpt2", COMBOS[-1], noise=noise)
        aligned = align(a, b, AlignConfig(method="weight", classes=COMBOS[-1])).aligned
        errors.append(distance(a.tensors, aligned.tensors))
    assert errors[0] < 1e-4
    assert errors[1] < 3 * 0.01 and errors[2] < 3 * 0.05, errors  # error of the order of the noise
    assert errors[0] <= errors[1] <= errors[2]


@pytest.mark.parametrize("family", ["gpt2", "vit"])
def test_outputs_load_with_plain_transformers_and_match_b(family, tmp_path):
    a = random_model(tiny_config(family, tied=True), seed=3)
    b = random_model(tiny_config(family, tied=True), seed=4)
    save_model(b, tmp_path / "b")
    for method_classes in (COMBOS[0], COMBOS[-1]):
        result = align(a, b, AlignConfig(method="weight", classes=method_classes))
        out = result.save(tmp_path / "out")
        auto = AutoModelForCausalLM if family == "gpt2" else AutoModelForImageClassification
        x = random_inputs(a, n=3)
        with torch.no_grad():
            plain_b = auto.from_pretrained(str(tmp_path / "b"))(**x).logits
            plain_out = auto.from_pretrained(str(out))(**x).logits
        assert (plain_out - plain_b).abs().max().item() < 1e-4
        report = json.loads((out / "alignment.json").read_text())
        assert report["config"]["classes"]["mlp"] == "perm" and report["sweeps"]
        assert (out / "transforms.safetensors").is_file()


@pytest.mark.slow
def test_learned_matching_lowers_the_path_loss(tmp_path):
    """Learned refinement on a tiny ViT pair trained briefly on digits: the mid-path loss drops."""
    from symalign.data import load_data
    from symalign.models import load_model
    from symalign.train.loop import train

    for seed in (0, 1):
        train("vit-digits", seed, tmp_path / str(seed), steps=60)
    a, b = load_model(tmp_path / "0"), load_model(tmp_path / "1")
    data = load_data("digits")
    classes = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}
    weight = align(a, b, AlignConfig(method="weight", classes=classes)).aligned
    learned = align(a, b, AlignConfig(method="learned", classes=classes, data="digits", steps=60)).aligned
    mid_weight = interpolation_curve(a, weight, data, points=3).loss[1]
    mid_learned = interpolation_curve(a, learned, data, points=3).loss[1]
    assert mid_learned < mid_weight
    x = random_inputs(a, n=2)
    assert (outputs(learned, x) - outputs(b, x)).abs().max().item() < 1e-4


def test_bad_alignment_input(tmp_path, capsys):
    g1 = random_model(tiny_config("gpt2", width=32), seed=0)
    g2 = random_model(tiny_config("gpt2", width=48, heads=4), seed=0)
    v = random_model(tiny_config("vit"), seed=0)
    with pytest.raises(ArchitectureMismatchError, match="different architectures"):
        align(g1, v, AlignConfig())
    with pytest.raises(ArchitectureMismatchError, match="head size"):
        align(g1, g2, AlignConfig())
    with pytest.raises(InadmissibleError, match="positively homogeneous"):
        align(g1, g1, AlignConfig(classes={"mlp": "scaled_perm"}))
    with pytest.raises(SymalignError, match="needs --data"):
        align(g1, g1, AlignConfig(method="learned", classes={"mlp": "perm"}))
    a, b = save_model(g1, tmp_path / "a"), save_model(v, tmp_path / "b")
    code = main(["align", str(a), str(b), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "different architectures" in err


def with_nonfinite(model, value: float):
    """The model with one tensor (the third) filled with `value`: as a Python user's arithmetic might leave it."""
    tensors = dict(model.tensors)
    name = list(tensors)[2]
    tensors[name] = torch.full_like(tensors[name], value)
    return model.with_tensors(tensors), name


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_model_with_nonfinite_weights_is_refused_at_every_entry(value):
    """Before, weight matching returned a NaN aligned model without a word, activation matching raised scipy's
    ValueError, learned matching blamed its learning rate and a curve blamed λ = 0 (A was fine)."""
    from symalign.data import load_data
    from symalign.landscape.plane import random_plane, three_point_plane
    from symalign.landscape.simplex import simplex_surface
    from symalign.match.universe import align_many
    from symalign.merge.merging import merge_models

    a = random_model(tiny_config("vit"), seed=0)
    bad, name = with_nonfinite(random_model(tiny_config("vit"), seed=1), value)
    data = load_data("digits")
    for method in ("weight", "activation", "learned"):
        with pytest.raises(SymalignError, match=f"model B has NaN or infinite values in {name}"):
            align(a, bad, AlignConfig(method=method, preset="permutations", data="digits", steps=2))
    with pytest.raises(SymalignError, match=f"model A has NaN or infinite values in {name}"):
        align(bad, a, AlignConfig())
    with pytest.raises(SymalignError, match=f"endpoint B has NaN or infinite values in {name}"):
        interpolation_curve(a, bad, data, points=3)
    with pytest.raises(SymalignError, match=f"corner C has NaN or infinite values in {name}"):
        simplex_surface(a, a, bad, data, resolution=2)
    with pytest.raises(SymalignError, match=f"merge input 2 has NaN or infinite values in {name}"):
        merge_models([a, bad], how_align="none")
    with pytest.raises(SymalignError, match=f"model 3 has NaN or infinite values in {name}"):
        align_many([a, a, bad], AlignConfig(preset="permutations"))
    with pytest.raises(SymalignError, match=f"C has NaN or infinite values in {name}"):
        three_point_plane(a, a, bad, data, resolution=2)
    with pytest.raises(SymalignError, match=f"A has NaN or infinite values in {name}"):
        random_plane(bad, data, resolution=2)


def test_the_finite_check_finds_each_kind_of_value_and_passes_large_finite_ones():
    """first_nonfinite checks a tensor's sum first (five times faster than isfinite on every value): a NaN, either
    infinity or both must still be found, and finite values whose sum overflows must still pass."""
    from symalign.models.finite import first_nonfinite

    assert first_nonfinite({"large": torch.full((10,), 3e38), "small": torch.randn(5)}) is None
    for values in ([float("nan")], [float("inf")], [-float("inf")], [float("inf"), -float("inf")]):
        t = torch.randn(100)
        t[3:3 + len(values)] = torch.tensor(values)
        assert first_nonfinite({"fine": torch.randn(4), "bad": t, "later": t.clone()}) == "bad", values


def test_weights_that_overflow_once_folded_are_refused_saying_so():
    """Finite weights of 1e20 became inf when canonical form folded the norm gains in (float32), and every matcher
    ended in torch's LinAlgError "the input matrix contained non-finite values"."""
    a = random_model(tiny_config("vit"), seed=0)
    b = random_model(tiny_config("vit"), seed=1)
    huge = b.with_tensors({name: t * 1e20 for name, t in b.tensors.items()})
    with pytest.raises(SymalignError, match="has NaN or infinite values in .* once its norm gains are folded"):
        align(a, huge, AlignConfig(preset="all"))


@pytest.mark.parametrize("classes", ["all", None, ["mlp"]])
def test_classes_that_are_not_a_mapping_are_refused_with_the_preset_hint(classes):
    """AlignConfig(classes="all") was a TypeError deep in __post_init__; a preset's name belongs in preset=."""
    with pytest.raises(SymalignError, match="A named preset goes in preset="):
        AlignConfig(classes=classes)
    assert AlignConfig(classes=classes, preset="all").classes["residual"] == "orthogonal"


def test_align_takes_model_references_and_a_default_config():
    """align("zoo:vit-digits/0", "zoo:vit-digits/1") was an AttributeError ('str' has no source), align(a, b, None)
    another: a reference is what load_model takes, and no config is the default one."""
    from symalign.models import load_model

    by_ref = align("zoo:vit-digits/0", "zoo:vit-digits/1")
    loaded = align(load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1"), AlignConfig())
    assert by_ref.report.distance_after == loaded.report.distance_after < by_ref.report.distance_before


@pytest.mark.parametrize("settings, message", [
    ({"method": "activation", "data": object()}, "data is a spec such as 'digits'"),
    ({"seed": "x"}, "seed takes an integer; got 'x'"),
    ({"method": "learned", "data": "digits", "lr": float("nan")}, "--lr takes a finite number; got nan"),
    ({"method": "soft", "data": "digits", "alpha": float("nan")}, "--alpha takes a finite number"),
])
def test_a_config_value_of_the_wrong_kind_is_one_line(settings, message):
    """A data source object where its spec belongs broke the run's record later; a NaN learning rate 'diverged at
    step 1, lower the learning rate'; a string seed was recorded as given."""
    with pytest.raises(SymalignError, match=message):
        AlignConfig(**settings)
