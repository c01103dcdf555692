"""The model at λ at work (issue #43 item 3): θ(λ) is A at 0 and B at 1, the same λ always shows the
same thing, and each task is shown its own way (continuation, masked-word predictions, class
probabilities); wrong input is one clear message."""

from __future__ import annotations

import pytest
import torch

from symalign.data import load_data
from symalign.errors import SymalignError
from symalign.landscape.at_lambda import at_work, blend
from symalign.models import canonicalize, load_model


@pytest.fixture(scope="module")
def gpt():
    return canonicalize(load_model("zoo:gpt-shakespeare/0")), canonicalize(load_model("zoo:gpt-shakespeare/1"))


def test_the_blend_is_a_at_zero_and_b_at_one(gpt):
    a, b = gpt
    assert all(torch.equal(blend(a, b, 0.0).tensors[k], a.tensors[k].float()) for k in a.tensors)
    assert all(torch.allclose(blend(a, b, 1.0).tensors[k], b.tensors[k].float()) for k in a.tensors)
    with pytest.raises(SymalignError, match="λ"):
        blend(a, b, 1.5)


def test_a_continuation_is_greedy_and_repeatable(gpt):
    a, b = gpt
    first = at_work(blend(a, b, 0.5), "ROMEO:\n", tokens=30)
    assert first.shown.startswith("ROMEO:\n") and len(first.continuation) == 30  # one character a token
    assert at_work(blend(a, b, 0.5), "ROMEO:\n", tokens=30) == first
    assert at_work(a, "ROMEO:\n", tokens=30).continuation != first.continuation  # halfway is another model


def test_a_masked_lm_fills_the_blank_and_a_classifier_gives_probabilities():
    bert = canonicalize(load_model("zoo:bert-shakespeare/0"))
    work = at_work(bert, "To be or not to b_")
    assert work.task == "masked-lm" and len(work.top) == 5
    assert all(p >= q for (_, p), (_, q) in zip(work.top, work.top[1:])) and sum(p for _, p in work.top) <= 1 + 1e-6
    with pytest.raises(SymalignError, match="_"):
        at_work(bert, "no blank here")
    vit = canonicalize(load_model("zoo:vit-digits/0"))
    shown = at_work(vit, data=load_data("digits"), example=3)
    assert shown.image is not None and shown.image.shape[0] in (1, 3) and 0 <= float(shown.image.min())
    assert len(shown.top) == 5 and shown.top[0][1] > 0.5  # a trained classifier is sure of a digit
    labels = torch.cat([y for _, y in load_data("digits").eval_batches(vit, 4)])
    names = vit.config.id2label or {}
    assert shown.truth == str(names.get(int(labels[3]), int(labels[3])))  # the example's true label
    with pytest.raises(SymalignError, match="data"):
        at_work(vit)


def test_the_panel_reads_loss_and_accuracy_at_the_nearest_measured_lambda():
    from symalign.landscape.at_lambda import point_on_curve

    curve = {"lambdas": [0.0, 0.25, 0.5, 0.75, 1.0], "loss": [1.0, 2.0, 3.0, 2.0, 1.1],
             "accuracy": [0.9, 0.5, 0.2, 0.5, 0.88]}
    assert point_on_curve(curve, 0.55) == (0.5, 3.0, 0.2)
    assert point_on_curve(curve, 0.9) == (1.0, 1.1, 0.88)
    assert point_on_curve({"lambdas": [0.0, 1.0], "loss": [1.0, 1.2]}, 0.4) == (0.0, 1.0, None)


@pytest.mark.parametrize("ref", ["zoo:gpt-shakespeare/0", "zoo:llama-shakespeare/0"])
def test_the_cached_generation_is_greedy_up_to_round_off(ref):
    """Issue #56: the λ panel generates with transformers' key/value cache (3x faster). Every token it
    picks must be the argmax of a full forward pass over the tokens before it, up to float round-off
    (the cache's sums run in another order, so a near-tie may break the other way: then both logits
    agree to 1e-4); past the context it slides a window, and both ways give a prompt plus 40 tokens."""
    from symalign.data.text import model_tokenizer
    from symalign.landscape.at_lambda import greedy_ids

    model = canonicalize(load_model(ref))
    module = model.to_module()
    prompt = model_tokenizer(model.source)("ROMEO:\nBut soft, what light")["input_ids"]
    ids = greedy_ids(module, prompt, 40, context=128)
    assert ids[:len(prompt)] == prompt and len(ids) == len(prompt) + 40
    with torch.inference_mode():
        logits = module(input_ids=torch.tensor([ids])).logits[0]  # causal: position t - 1 predicts token t
    for t in range(len(prompt), len(ids)):
        assert float(logits[t - 1].max() - logits[t - 1, ids[t]]) < 1e-4, t
    window = greedy_ids(module, prompt, 40, context=len(prompt) + 10)  # the sliding window's path
    assert window[:len(prompt)] == prompt and len(window) == len(prompt) + 40
