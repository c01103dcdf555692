"""The memory-lean paths real checkpoints take compute what the plain paths compute: each is
forced on at zoo size here (a tiny block, a tiny budget, a zero size threshold) and compared with
the path the zoo takes."""

from __future__ import annotations

import pytest
import torch

import symalign.landscape.evaluate as evaluate_module
import symalign.match.learned as learned_module
import symalign.match.mapped as mapped_module
import symalign.models.canonical as canonical_module
import symalign.symmetry.groups as groups_module
from symalign.data import load_data
from symalign.landscape.evaluate import evaluate
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.match.weight import distance
from symalign.models import canonicalize, load_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform

ALL = CLASS_PRESETS["all"]


@pytest.mark.parametrize("family", ["gpt2", "vit", "llama"])
def test_canonical_form_folded_a_few_rows_at_a_time_is_exactly_the_whole_fold(family, monkeypatch):
    model = random_model(tiny_config(family, tied=family == "gpt2"), seed=3)
    whole = canonicalize(model)
    monkeypatch.setattr(canonical_module, "ROWS_PER_CHUNK", 3)
    blocks = canonicalize(model)
    assert all(torch.equal(whole.tensors[k], blocks.tensors[k]) for k in whole.tensors)
    assert canonicalize(blocks) is blocks  # an exactly canonical model is not folded (or copied) again


def test_a_map_applied_in_blocks_of_rows_is_the_map_applied_at_once(monkeypatch):
    t = torch.randn(37, 24)
    q = torch.linalg.qr(torch.randn(24, 24, dtype=torch.float64))[0]
    rows, columns = groups_module._along(t, 1, q, None), groups_module._along(t.T.contiguous(), 0, q, None)
    monkeypatch.setattr(groups_module, "ALONG_BLOCK", 50)
    assert torch.equal(groups_module._along(t, 1, q, None), rows)
    assert torch.equal(groups_module._along(t.T.contiguous(), 0, q, None), columns)


def test_weight_matching_with_b_stored_in_float32_recovers_a_planted_transform(monkeypatch):
    a = canonicalize(random_model(tiny_config("gpt2", layers=2, width=32, tied=False), seed=0))
    b = transformed(a, random_transform(spec_of(a), ALL, seed=1))
    monkeypatch.setattr(mapped_module, "LARGE_MODEL_PARAMETERS", 0)  # every model counts as large
    result = align(a, b, AlignConfig(method="weight", classes=ALL))
    assert distance(a.tensors, b.tensors) > 0.3
    assert distance(a.tensors, result.aligned.tensors) < 1e-4
    assert result.report["function_gap_vs_b"] < 1e-4


def test_weight_matching_says_why_it_stopped():
    a, b = load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1")
    budget = align(a, b, AlignConfig(method="weight", classes=ALL, max_seconds=1e-6))
    assert budget.report["sweeps"][-1]["stopped"].startswith("time budget") and budget.report["sweeps"][-1]["sweep"] == 1
    sweeps = align(a, b, AlignConfig(method="weight", classes=ALL, max_sweeps=2))
    assert sweeps.report["sweeps"][-1]["stopped"] == "sweep budget (2 sweeps)"
    full = align(a, b, AlignConfig(method="weight", classes=ALL))
    assert full.report["sweeps"][-1]["stopped"].startswith("converged after")


def test_text_evaluation_in_logit_bounded_batches_gives_the_same_loss(monkeypatch):
    model, data = load_model("zoo:gpt-shakespeare/0"), load_data("shakespeare")
    whole = evaluate(model, data, max_examples=12)
    monkeypatch.setattr("symalign.data.text.LOGIT_BUDGET", 1)  # one window per batch
    split = evaluate(model, data, max_examples=12)
    assert split.examples == whole.examples == 12
    assert split.loss == pytest.approx(whole.loss, rel=1e-6) and split.accuracy == whole.accuracy


@pytest.mark.parametrize("recipe, data", [("gpt-shakespeare", "shakespeare"), ("pythia-shakespeare", "shakespeare"),
                                          ("bert-shakespeare", "shakespeare-mlm")])
def test_learned_matching_in_micro_batches_follows_the_whole_batch(recipe, data, monkeypatch):
    """Gradients of micro-batches add up to the whole batch's, also when they are carried back through
    the transforms one parameter at a time (fused QKV, a tied decoder): the same trajectory to round-off."""
    a, b = load_model(f"zoo:{recipe}/0"), load_model(f"zoo:{recipe}/1")
    config = AlignConfig(method="learned", preset="all", data=data, steps=4, batch_size=6, max_sweeps=2)
    whole = align(a, b, config)
    calls = []

    def tiny(template, inputs, budget=None):
        calls.append(len(next(iter(inputs.values()))))
        return 2

    monkeypatch.setattr(learned_module, "examples_per_chunk", tiny)
    split = align(a, b, config)
    assert calls and max(calls) > 2  # batches were really split
    losses = [h["loss"] for h in whole.report["learned"][1:]]
    assert [h["loss"] for h in split.report["learned"][1:]] == pytest.approx(losses, rel=1e-4)
    assert distance(whole.aligned.tensors, split.aligned.tensors) < 1e-4


def test_the_zoo_fits_in_one_micro_batch_so_its_numbers_do_not_move():
    for ref, spec in (("zoo:gpt-shakespeare/0", "shakespeare"), ("zoo:llama-shakespeare/0", "shakespeare"),
                      ("zoo:vit-digits/0", "digits"), ("zoo:bert-shakespeare/0", "shakespeare-mlm")):
        model = load_model(ref)
        inputs, _ = load_data(spec).train_batch(model, 2, torch.Generator().manual_seed(0))
        assert evaluate_module.examples_per_chunk(model, inputs) >= 128  # check_examples, the largest batch


def test_a_curve_between_handed_over_models_matches_one_between_held_models():
    a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
    held = interpolation_curve(a, b, load_data("digits"), points=5)
    pair = [load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")]
    handed = interpolation_curve(pair.pop(0), pair.pop(0), load_data("digits"), points=5)
    assert handed.loss == held.loss


@pytest.mark.parametrize("recipe, spec", [("gpt-shakespeare", "shakespeare"), ("bert-shakespeare", "shakespeare-mlm")])
def test_a_curve_walked_in_place_matches_the_buffered_curve_and_leaves_the_models_alone(recipe, spec, monkeypatch):
    """Above the size threshold the curve walks one endpoint's parameters along the direction instead
    of filling a third parameter set: the same losses to float32 round-off, and models that a caller
    still holds (BERT: a tied decoder) are not changed by it."""
    import symalign.landscape.interpolation as interpolation_module

    a, b = load_model(f"zoo:{recipe}/0"), load_model(f"zoo:{recipe}/1")
    data = load_data(spec)
    buffered = interpolation_curve(a, b, data, points=6, max_examples=16)
    ca, cb = canonicalize(a), canonicalize(b)
    before = {k: t.clone() for k, t in (ca.tensors | {f"b.{k}": t for k, t in cb.tensors.items()}).items()}
    monkeypatch.setattr(interpolation_module, "LARGE_MODEL_PARAMETERS", 0)
    walked = interpolation_curve(ca, cb, data, points=6, max_examples=16)
    assert walked.loss == pytest.approx(buffered.loss, rel=1e-5, abs=1e-6)
    after = ca.tensors | {f"b.{k}": t for k, t in cb.tensors.items()}
    assert all(torch.equal(before[k], after[k]) for k in before)
