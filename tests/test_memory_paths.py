"""The memory-lean paths real checkpoints take compute what the plain paths compute: each is
forced on at zoo size here (a tiny block, a tiny budget, a zero size threshold) and compared with
the path the zoo takes."""

from __future__ import annotations

import pytest
import torch

import symalign.landscape.evaluate as evaluate_module
import symalign.match.learned.objective as objective_module
import symalign.match.weight.running as mapped_module
import symalign.models.canonical as canonical_module
import symalign.symmetry.groups as groups_module
from symalign.data import load_data
from symalign.landscape.evaluate import evaluate
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.match.weight.descent import distance
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
    assert result.report.function_gap_vs_b < 1e-4


def test_weight_matching_says_why_it_stopped():
    a, b = load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1")
    budget = align(a, b, AlignConfig(method="weight", classes=ALL, max_seconds=1e-6))
    last = budget.report.sweeps[-1]
    assert last.stopped.startswith("time budget") and last.sweep == 1
    sweeps = align(a, b, AlignConfig(method="weight", classes=ALL, max_sweeps=2))
    assert sweeps.report.sweeps[-1].stopped == "sweep budget (2 sweeps)"
    full = align(a, b, AlignConfig(method="weight", classes=ALL))
    assert full.report.sweeps[-1].stopped.startswith("converged after")


def test_text_evaluation_in_logit_bounded_batches_gives_the_same_loss(monkeypatch):
    model, data = load_model("zoo:gpt-shakespeare/0"), load_data("shakespeare")
    whole = evaluate(model, data, max_examples=12)
    monkeypatch.setattr("symalign.data.text.LOGIT_BUDGET", 1)  # one window per batch
    split = evaluate(model, data, max_examples=12)
    assert split.examples == whole.examples == 12
    assert split.loss == pytest.approx(whole.loss, rel=1e-6) and split.accuracy == whole.accuracy


@pytest.mark.parametrize("recipe, data", [("gpt-shakespeare", "shakespeare"), ("pythia-shakespeare", "shakespeare"),
                                          ("bert-shakespeare", "shakespeare-mlm")])
@pytest.mark.slow
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

    monkeypatch.setattr(objective_module, "examples_per_chunk", tiny)
    split = align(a, b, config)
    assert calls and max(calls) > 2  # batches were really split
    losses = [h.loss for h in whole.report.learned[1:]]
    assert [h.loss for h in split.report.learned[1:]] == pytest.approx(losses, rel=1e-4)
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


@pytest.mark.parametrize("family", ["gpt2", "vit", "llama"])
def test_a_consumed_model_folds_to_exactly_the_canonical_form_and_is_emptied(family, monkeypatch):
    """A workflow that loaded a model hands it to canonicalize, which lets each raw tensor go as it
    is read; a token embedding is centred a block at a time. Both give the plain fold, bit for bit."""
    model = random_model(tiny_config(family, tied=family == "gpt2"), seed=4)
    plain = canonicalize(model)
    monkeypatch.setattr(canonical_module, "CENTRE_WHOLE", 7)  # every writer centred in small blocks
    copy = model.with_tensors({k: t.clone() for k, t in model.tensors.items()})
    consumed = canonicalize(copy, consume=True)
    assert list(consumed.tensors) == list(plain.tensors)
    assert all(torch.equal(plain.tensors[k], consumed.tensors[k]) for k in plain.tensors)
    assert copy.tensors == {}  # nothing of the raw model is held any more
    assert model.tensors and canonicalize(model).tensors.keys() == plain.tensors.keys()  # not consumed: intact


@pytest.mark.parametrize("inner_passes", [0, 10])
def test_weight_matching_builds_aligned_b_in_a_handed_over_b(monkeypatch, inner_passes):
    """At real scale align() lets weight matching turn a B it was handed into aligned B (its float32
    working copy): the same transform, and the same tensors as the transform applied once to B, to
    float32 round-off; static tensors (embedding, LM head) included. With and without inner passes
    (issue #73: held MLP tensors are moved once, when the passes end)."""
    import symalign.match.weight.descent as weight_module

    a = canonicalize(random_model(tiny_config("gpt2", layers=2, width=32, tied=False), seed=0))
    b = transformed(a, random_transform(spec_of(a), ALL, seed=1))
    monkeypatch.setattr(mapped_module, "LARGE_MODEL_PARAMETERS", 0)
    monkeypatch.setattr(mapped_module, "FOLD_RATIO", 0)  # the embedding and LM head count as static
    # float64 and the inner passes both times: "real scale" below would otherwise also switch the precision
    # (test_weight_precision) and turn the inner passes on (weight.default_inner_passes)
    config = AlignConfig(method="weight", classes=ALL, max_sweeps=2,
                         options={"precision": "float64", "inner_passes": inner_passes})
    exact = align(a, b, config)
    monkeypatch.setattr(weight_module, "LARGE_MODEL_PARAMETERS", 0)
    handed = b.with_tensors(dict(b.tensors))
    built = align(a, handed, config, consume_b=True)
    assert handed.tensors == {}
    assert all(torch.equal(exact.transform[k].dense(), built.transform[k].dense()) for k in exact.transform)
    assert list(built.aligned.tensors) == list(exact.aligned.tensors)
    for k, t in exact.aligned.tensors.items():
        assert (built.aligned.tensors[k] - t).abs().max() <= 1e-5 * max(1.0, float(t.abs().max())), k
    assert built.report.function_gap_vs_b < 1e-4


def test_a_curve_between_consumed_models_walks_their_own_memory_and_matches(monkeypatch):
    import symalign.landscape.interpolation as interpolation_module

    data = load_data("shakespeare")
    held = interpolation_curve(load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1"), data,
                               points=5, max_examples=16)
    monkeypatch.setattr(interpolation_module, "LARGE_MODEL_PARAMETERS", 0)
    walked = interpolation_curve(load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1"), data,
                                 points=5, max_examples=16, consume=(True, True))
    assert walked.loss == pytest.approx(held.loss, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("grouped", [False, True])
def test_head_costs_from_factors_are_the_inner_products_of_the_circuits(grouped):
    """Weight matching scores head pairs without forming d × d circuits; the score is still
    ⟨QK_a, QK_b⟩ + ⟨OV_a, OV_b⟩ of the circuits written out (biases as an extra column)."""
    from symalign.match.weight.units import head_cost, query_head_cost

    g = torch.Generator().manual_seed(0)
    h, q, dh, d = 3, 2, 4, 10

    def heads() -> dict[str, torch.Tensor]:
        qs = (h, q, dh, d) if grouped else (h, dh, d)
        p = "layer.1.attn."
        return {p + "q.weight": torch.randn(qs, generator=g), p + "q.bias": torch.randn(qs[:-1], generator=g),
                p + "k.weight": torch.randn(h, dh, d, generator=g), p + "v.weight": torch.randn(h, dh, d, generator=g),
                p + "v.bias": torch.randn(h, dh, generator=g),
                p + "o.weight": torch.randn((d, h, q, dh) if grouped else (d, h, dh), generator=g)}

    def circuits(t: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:  # [H(, g), d+1, d+1], [.., d, d+1]
        p = "layer.1.attn."
        def with_bias(n: str) -> torch.Tensor:
            w = t[p + n + ".weight"].double()
            b = t.get(p + n + ".bias", torch.zeros(w.shape[:-1])).double()
            return torch.cat([w, b[..., None]], -1)
        wq, wk, wv, wo = with_bias("q"), with_bias("k"), with_bias("v"), t[p + "o.weight"].double()
        if not grouped:
            return wq.mT @ wk, torch.stack([wo[:, i] @ wv[i] for i in range(h)])
        qk = torch.stack([torch.stack([wq[i, j].T @ wk[i] for j in range(q)]) for i in range(h)])
        ov = torch.stack([torch.stack([wo[:, i, j] @ wv[i] for j in range(q)]) for i in range(h)])
        return qk, ov

    a, b = heads(), heads()
    (qa, oa), (qb, ob) = circuits(a), circuits(b)
    if grouped:  # whole key/value heads: the circuits summed over their query heads
        expected = (qa.sum(1).flatten(1) @ qb.sum(1).flatten(1).T) + (oa.sum(1).flatten(1) @ ob.sum(1).flatten(1).T)
        inner = torch.einsum("hgde,hGde->hgG", qa, qb) + torch.einsum("hgde,hGde->hgG", oa, ob)
        assert torch.allclose(query_head_cost(a, b, 1), inner, rtol=1e-12, atol=1e-9)
    else:
        expected = qa.flatten(1) @ qb.flatten(1).T + oa.flatten(1) @ ob.flatten(1).T
    assert torch.allclose(head_cost(a, b, 1), expected, rtol=1e-12, atol=1e-9)
