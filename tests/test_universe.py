"""Universe alignment of three or more models: planted transforms are undone jointly (aligned
weights coincide, every pairwise barrier vanishes), each output keeps its model's function and
loads with plain transformers, learned refinement keeps an exact start, bad input is refused."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageClassification

from symalign.cli import main
from symalign.data import load_data
from symalign.errors import SymalignError
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.match.universe import align_many
from symalign.match.weight.descent import distance
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import load_transforms

ALL = CLASS_PRESETS["all"]


def planted_three(family: str, seed: int = 0, base=None):
    """One model (random unless given) under three different random transforms (perms, head rotations,
    residual orthogonal)."""
    base = canonicalize(base or random_model(tiny_config(family, tied=False, layers=2, width=32), seed=seed))
    models = [transformed(base, random_transform(spec_of(base), ALL, seed=seed + k)) for k in (1, 2, 3)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert distance(models[i].tensors, models[j].tensors) > 0.3  # genuinely different weights
    return models


@pytest.mark.parametrize("family", ["gpt2", "vit"])
@pytest.mark.parametrize("rounds", [0, 1])
def test_planted_transforms_are_undone_into_one_basis(family, rounds):
    models = planted_three(family)
    universe = align_many(models, AlignConfig(method="weight", classes=ALL, rounds=rounds))
    aligned = universe.aligned
    for i in range(3):
        for j in range(i + 1, 3):
            assert distance(aligned[i].tensors, aligned[j].tensors) < 1e-5
    x = random_inputs(models[0], n=3)
    for original, mapped in zip(models, aligned):
        assert (outputs(original, x) - outputs(mapped, x)).abs().max().item() < 1e-4
    assert len(universe.report["rounds"]) == rounds


def test_planted_pairwise_barriers_vanish():
    models = planted_three("vit", seed=4, base=load_model("zoo:vit-digits/0"))  # trained: a real barrier
    aligned = align_many(models, AlignConfig(method="weight", classes=ALL)).aligned
    data = load_data("digits")
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        assert interpolation_curve(models[i], models[j], data, points=5, max_examples=128).barrier > 0.01
        assert interpolation_curve(aligned[i], aligned[j], data, points=5, max_examples=128).barrier < 1e-3


@pytest.mark.slow
def test_learned_refinement_keeps_an_exact_start_and_its_start_in_the_files(tmp_path):
    """Weight matching already undoes the planted maps; learning must not move away from them."""
    models = planted_three("vit", seed=8, base=load_model("zoo:vit-digits/1"))  # trained: the start is optimal
    config = AlignConfig(method="learned", classes=ALL, data="digits", steps=300)
    universe = align_many(models, config)
    assert universe.report["learned_summary"]["best_step"] == 0
    summary = universe.report["learned_summary"]
    assert summary["stopped"].startswith("check stalled") and summary["steps"] <= 75  # stops almost at once
    aligned = universe.aligned
    assert max(distance(aligned[0].tensors, a.tensors) for a in aligned[1:]) < 1e-5
    dirs = universe.save(tmp_path / "u")
    learned, start = load_transforms(dirs[1] / "transforms.safetensors")
    assert start is not None and set(start) == set(learned)
    assert load_transforms(dirs[0] / "transforms.safetensors")[1] is None


def test_align_many_cli_writes_each_model_in_the_shared_basis(tmp_path, capsys):
    out = tmp_path / "universe"
    code = main(["align-many", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--classes", "all",
                 "--rounds", "1", "--out", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["outputs"] == [str(out / str(i)) for i in range(3)] and summary["method"] == "weight"
    assert summary["classes"]["residual"] == "orthogonal" and summary["rounds"] == 1
    report = json.loads((out / "alignment.json").read_text())
    assert report["kind"] == "universe" and len(report["members"]) == 3 and len(report["rounds"]) == 1
    data = load_data("digits")
    x = {"pixel_values": data.eval_x[:16]}
    for i in range(3):
        original = load_model(f"zoo:vit-digits/{i}")
        plain = AutoModelForImageClassification.from_pretrained(str(out / str(i)))
        with torch.no_grad():
            assert (plain(**x).logits - outputs(original, x)).abs().max().item() < 1e-4
        assert (out / str(i) / "transforms.safetensors").is_file()
    before, after = report["pairwise_distance_before"], report["pairwise_distance_after"]
    assert all(after[0][i] < before[0][i] for i in (1, 2))


def test_align_many_of_text_models_keeps_their_tokenizers(tmp_path, capsys):
    out = tmp_path / "u"
    assert main(["align-many", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "zoo:gpt-shakespeare/2",
                 "--out", str(out)]) == 0
    for i in range(3):
        assert (out / str(i) / "tokenizer.json").is_file()
        AutoModelForCausalLM.from_pretrained(str(out / str(i)))


def test_bad_align_many_input(tmp_path, capsys):
    two = ["zoo:vit-digits/0", "zoo:vit-digits/1"]
    assert main(["align-many", *two, "--out", str(tmp_path / "a")]) == 2
    assert "at least three models" in capsys.readouterr().err
    mixed = [*two, "zoo:gpt-shakespeare/0"]
    assert main(["align-many", *mixed, "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model 1 and model 3 cannot be aligned" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    with pytest.raises(SymalignError, match="at least three"):
        align_many([load_model("zoo:vit-digits/0")] * 2, AlignConfig())
    with pytest.raises(SymalignError, match="supports --method"):
        align_many([load_model("zoo:vit-digits/0")] * 3, AlignConfig(method="activation", data="digits"))


def test_three_random_models_of_other_widths_are_refused(tmp_path, capsys):
    paths = [str(save_model(random_model(tiny_config("gpt2", width=w), seed=i), tmp_path / str(i)))
             for i, w in enumerate((32, 32, 48))]
    assert main(["align-many", *paths, "--out", str(tmp_path / "o")]) == 2
    assert "models of different widths" in capsys.readouterr().err and not (tmp_path / "o").exists()
