"""mergekit's merge methods as merge rules: the exact hand-off to `mergekit-yaml`, TIES with a base
on the zoo's fine-tunes, SLERP before and after alignment, and one-line refusals."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from symalign.cli import main
from symalign.merge import merge_models
from symalign.merge.merging import aligned_members
from symalign.models import load_model

pytest.importorskip("mergekit")  # an optional dependency; the dev extra (CI) installs it


def mergekit_yaml() -> str:
    found = shutil.which("mergekit-yaml") or str(Path(sys.executable).parent / "mergekit-yaml")
    assert Path(found).is_file(), "mergekit-yaml not found beside this Python"
    return found


@pytest.mark.slow
def test_mergekit_yaml_on_the_exported_config_rebuilds_the_same_weights(tmp_path, capsys):
    """`merge --export-inputs` writes the aligned inputs (both in A's canonical basis) and a
    mergekit.yml; mergekit-yaml on it gives symalign's merged checkpoint back."""
    out = tmp_path / "slerp"
    assert main(["merge", "zoo:llama-shakespeare/0", "zoo:llama-shakespeare/1", "--how", "slerp", "--param", "t=0.3",
                 "--export-inputs", "--max-examples", "16", "--out", str(out), "--no-record"]) == 0
    assert "mergekit-yaml" in capsys.readouterr().out
    assert (out / "mergekit.yml").is_file() and (out / "inputs" / "1" / "model.safetensors").is_file()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    subprocess.run([mergekit_yaml(), str(out / "mergekit.yml"), str(tmp_path / "mergekit")], check=True, env=env,
                   capture_output=True, timeout=600)
    ours = load_file(str(out / "model.safetensors"))
    theirs = load_file(str(tmp_path / "mergekit" / "model.safetensors"))
    assert set(ours) == set(theirs)
    for name, t in ours.items():
        gap = (theirs[name].double() - t.double()).norm() / t.double().norm()
        assert gap <= 1e-5, name
    first = load_model(out / "inputs" / "0")  # A as merged: its canonical form (same function as zoo A)
    assert not torch.equal(first.tensors["layer.0.ln1.weight"],
                           load_model("zoo:llama-shakespeare/0").tensors["layer.0.ln1.weight"])


def test_ties_with_a_base_merges_the_zoo_fine_tunes(tmp_path, capsys):
    """The flipped-digits fine-tunes of vit-digits/0 merged as task vectors from it: the merge keeps
    the task that the base does not have."""
    assert main(["merge", "zoo:vit-digits-flipped/0", "zoo:vit-digits-flipped/1", "--base", "zoo:vit-digits/0",
                 "--how", "ties", "--param", "density=0.5", "--data", "digits-flipped", "--out", str(tmp_path / "t"),
                 "--no-record", "--json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["base"].endswith("vit-digits/0") and report["parameters"] == {"weight": 1.0, "density": 0.5}
    base, *fine_tunes = report["inputs"]
    assert base["accuracy"] < 0.5 < 0.9 < report["merged"]["accuracy"]


def test_aligned_slerp_beats_unaligned_slerp_on_the_zoo():
    a, b = load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1")
    losses = {}
    for how_align in ("none", "weight"):
        members = aligned_members([a, b], how_align, None)
        result = merge_models([a, b], how_align, "slerp", "shakespeare", max_examples=32, members=members,
                              parameters={"t": 0.5})
        losses[how_align] = result.report["merged"]["loss"]
    assert losses["weight"] < losses["none"] - 0.3, losses


@pytest.mark.parametrize("argv, message", [
    (["--how", "ties"], "needs --base M"),
    (["--how", "linear", "--base", "zoo:vit-digits/0"], "takes no --base"),
    (["--how", "slerp", "--param", "t=2"], "outside [0, 1]"),
    (["--how", "slerp", "--param", "q=1"], "has no parameter q; its parameters: t"),
    (["--how", "slerp", "--param", "t=x"], "give NAME=NUMBER"),
    (["--how", "model_stock", "--base", "zoo:vit-digits/0", "--param", "t=1"], "has no parameter t"),
])
def test_bad_method_parameters_are_one_line(argv, message, tmp_path, capsys):
    code = main(["merge", "zoo:vit-digits-flipped/0", "zoo:vit-digits-flipped/1", *argv, "--out", str(tmp_path / "m"),
                 "--no-record"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "m").exists()


def test_without_mergekit_its_methods_are_refused_in_one_line(monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mergekit" else real(name, *a))
    assert main(["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", "--how", "slerp", "--out", str(tmp_path / "m"),
                 "--no-record"]) == 2
    assert "pip install mergekit" in capsys.readouterr().err


def test_align_writes_the_canonical_a_that_aligned_b_pairs_with(tmp_path, capsys):
    """`align --canonical-a DIR`: A's canonical form (A's function), exactly the basis `merge` pairs
    the aligned B with, so a merger given the two merges what symalign merges."""
    from symalign.models import canonicalize, outputs, random_inputs

    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--classes", "all", "--out", str(tmp_path / "b"),
                 "--canonical-a", str(tmp_path / "a"), "--no-record"]) == 0
    assert "A in canonical form" in capsys.readouterr().out
    a, written = load_model("zoo:vit-digits/0"), load_model(tmp_path / "a")
    x = random_inputs(a, n=4, seed=0)
    assert (outputs(written, x) - outputs(a, x)).abs().max() < 1e-4
    expected = canonicalize(a).tensors  # what aligned_members puts first
    assert max((written.tensors[k] - t).abs().max().item() for k, t in expected.items()) < 1e-6
    assert max((written.tensors[k] - a.tensors[k]).abs().max().item() for k in a.tensors) > 1e-2  # not the raw A
