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
