"""Activation collection reads only the rows its solves use (issue #58): the data pass stops once it
has MAX_ROWS token positions, keeps them in the model's precision, and gives the same activations
(as float64) as a pass over every example cut afterwards."""

from __future__ import annotations

import torch

from symalign.data import load_data
from symalign.match.activation import capture
from symalign.models import load_model


def test_the_pass_stops_at_max_rows_and_keeps_the_same_rows(monkeypatch):
    model, data = load_model("zoo:gpt-shakespeare/0"), load_data("shakespeare")
    batches = []
    original = data.eval_batches

    def counted(*args, **kwargs):
        for batch in original(*args, **kwargs):
            batches.append(batch)
            yield batch

    monkeypatch.setattr(data, "eval_batches", counted)
    monkeypatch.setattr(capture, "MAX_ROWS", 10**9)
    everything = capture.collect(model, data, max_examples=None)
    all_batches = len(batches)
    batches.clear()
    rows_per_batch = next(iter(original(model, None)))[0]["input_ids"].numel()
    monkeypatch.setattr(capture, "MAX_ROWS", rows_per_batch + 1)  # needs the second batch, not the third
    cut = capture.collect(model, data, max_examples=None)
    assert all_batches > 2 and len(batches) == 2
    assert set(cut) == set(everything)
    for key in everything:
        assert cut[key].dtype == torch.float64
        assert cut[key].shape[0] == rows_per_batch + 1, key
        assert torch.equal(cut[key], everything[key][:rows_per_batch + 1]), key
