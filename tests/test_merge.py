"""Merging (issue #12): two planted copies of one model merge back into that model once aligned,
and not without alignment; Fisher and RegMean are exact on identical members; aligned merging of
real seeds beats unaligned merging; the checkpoint loads with plain transformers; bad input is
one line, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForImageClassification

from symalign.cli import main
from symalign.match.config import CLASS_PRESETS
from symalign.merge import merge_models
from symalign.models import canonicalize, load_model, outputs, random_inputs, spec_of, transformed
from symalign.runs import RunStore
from symalign.runs.table import run_label
from symalign.symmetry.random import random_transform


@pytest.fixture(scope="module")
def vit():
    return load_model("zoo:vit-digits/0")


@pytest.fixture(scope="module")
def planted(vit):
    return transformed(canonicalize(vit), random_transform(spec_of(canonicalize(vit)), CLASS_PRESETS["all"], seed=7))


def gap(a, b) -> float:
    x = random_inputs(a, n=8)
    return float((outputs(a, x) - outputs(b, x)).abs().max())


@pytest.mark.parametrize("how", ["average", "fisher", "regmean"])
def test_merging_a_planted_copy_with_alignment_returns_the_model(vit, planted, how):
    aligned = merge_models([vit, planted], "weight", how, "digits", examples=32, max_examples=256)
    assert gap(vit, aligned.merged) < 1e-4
    assert aligned.report["merged"]["loss"] == pytest.approx(aligned.report["inputs"][0]["loss"], abs=1e-4)
    unaligned = merge_models([vit, planted], "none", how, "digits", examples=32, max_examples=256)
    assert gap(vit, unaligned.merged) > 1.0  # averaging across a symmetry breaks the function
    assert unaligned.report["merged"]["loss"] > aligned.report["merged"]["loss"] + 0.5


@pytest.mark.parametrize("recipe, data, how", [("bert-shakespeare", "shakespeare-mlm", how)
                                               for how in ("average", "fisher", "regmean")]
                         + [("llama-shakespeare", "shakespeare", "regmean")])
@pytest.mark.slow
def test_merging_works_unchanged_on_the_newer_families(recipe, data, how):
    """A tied BERT (post-LN; its decoder is the token embedding, which RegMean must not split from
    it) and a Llama (RMSNorm, grouped queries, rotary QK maps): a planted copy merges back."""
    model = canonicalize(load_model(f"zoo:{recipe}/0"))
    spec = spec_of(model)
    copy = transformed(model, random_transform(spec, spec.fit(CLASS_PRESETS["all"]), seed=3))
    result = merge_models([model, copy], "weight", how, data, examples=8, max_examples=32)
    assert gap(model, result.merged) < 1e-4
    assert result.report["merged"]["loss"] == pytest.approx(result.report["inputs"][0]["loss"], abs=1e-4)


@pytest.mark.parametrize("how", ["fisher", "regmean"])
def test_weighted_merges_of_identical_members_are_exact(vit, how):
    merged = merge_models([vit, vit, vit], "none", how, "digits", examples=16, max_examples=64).merged
    assert gap(vit, merged) < 1e-4


def test_aligned_merging_of_real_seeds_beats_unaligned_merging():
    models = [load_model(f"zoo:vit-digits/{i}") for i in (0, 1)]
    data = "digits"
    aligned = merge_models(models, "weight", "average", data, max_examples=512).report["merged"]["loss"]
    unaligned = merge_models(models, "none", "average", data, max_examples=512).report["merged"]["loss"]
    assert aligned < unaligned - 0.3, (aligned, unaligned)


def test_cli_merge_writes_a_plain_transformers_checkpoint_and_records_a_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "merged"
    assert main(["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", "--how", "regmean", "--examples", "16",
                 "--max-examples", "128", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) >= {"inputs", "merged", "out"} and len(report["inputs"]) == 2
    assert all(set(r) >= {"model", "loss", "accuracy"} for r in report["inputs"])
    module = AutoModelForImageClassification.from_pretrained(out).eval()
    merged = load_model(out)
    x = random_inputs(merged, n=4)
    with torch.no_grad():
        assert torch.allclose(module(**x).logits, outputs(merged, x), atol=1e-5)
    assert json.loads((out / "merge.json").read_text())["how"] == "regmean"
    (run,) = RunStore(tmp_path / "home" / "runs.sqlite").list(kind="merge")
    assert run.id == report["run"] and run.metrics["merged"] == pytest.approx(report["merged"])
    assert run.artifacts == str(out) and run.source == "cli"
    assert run_label(run).startswith("merge regmean (weight alignment) of 2 models")


def test_cli_merge_prints_a_readable_report_without_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "merged"
    assert main(["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "none", "--max-examples", "64",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}: 2 models merged (average, aligned by none)" in printed
    assert printed.count("loss ") == 3 and "recorded as run" in printed


@pytest.mark.parametrize("argv, message", [
    (["zoo:vit-digits/0", "zoo:gpt-shakespeare/0"], "gpt"),
    (["zoo:vit-digits/0"], "at least two models"),
    (["zoo:vit-digits/0", "/no/such/model"], "/no/such/model"),
    # mergekit's linear normalises by the weights' sum: weight=0 was a merged model of NaNs, recorded with loss NaN
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "none", "--how", "linear", "--param", "weight=0"],
     "--how linear: weight = 0 is outside [1e-06, 1e+06]"),
])
def test_bad_merges_are_one_line_and_write_nothing(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "merged"
    assert main(["merge", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()
    history = tmp_path / "home" / "runs.sqlite"
    assert not history.exists() or RunStore(history).list() == []  # no run recorded either


def test_a_rule_that_merges_into_nan_is_refused_naming_the_rule_and_tensor():
    """Whatever the rule (a plugin's, or a built-in at a parameter nobody foresaw), a merged model of NaN or
    infinite weights is refused before it is measured, saved or recorded with loss NaN."""
    from symalign.errors import SymalignError
    from symalign.merge.builtin_rules import MergeRule, register, unregister
    from symalign.merge.merging import merge_models

    def overflowing(members, inputs):
        return {name: t * float("inf") for name, t in members[0].tensors.items()}

    register(MergeRule("overflowing", "overflows (a test rule)", overflowing, parameters={"scale": 1.0}))
    try:
        a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
        with pytest.raises(SymalignError, match=r"the model --how overflowing \(scale=2\) merged has NaN or infinite"):
            merge_models([a, b], how_align="none", how="overflowing", parameters={"scale": 2.0}, data_spec="digits")
    finally:
        unregister("overflowing")
