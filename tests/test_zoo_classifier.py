"""The shipped classification task (issue #42 item 7): `shakespeare-genre` (which genre a speech is
from), and zoo:bert-shakespeare-genre, each seed of zoo:bert-shakespeare fine-tuned with a new
classifier head. The data is balanced and fixed; a fine-tune keeps the base's body and starts a
named head; the shipped classifiers tell genres apart well above chance, and aligning a pair keeps
each one's function."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from symalign.data import load_data
from symalign.data.labelled import GENRES
from symalign.landscape.evaluate import evaluate
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model
from symalign.train.loop import train


def test_the_genre_data_is_balanced_fixed_and_split_once():
    data = load_data("shakespeare-genre")
    counts = Counter(label for _, _, label in data.train_rows + data.eval_rows)
    assert sorted(counts) == [0, 1, 2] and len(set(counts.values())) == 1  # the same number per genre
    assert not {t for t, _, _ in data.eval_rows} & {t for t, _, _ in data.train_rows} - {""}
    assert len(data.eval_rows) == pytest.approx(0.2 * sum(counts.values()), abs=1)
    assert all(":" in t.split()[0] or ":" in t[:40] for t, _, _ in data.eval_rows[:20])  # 'NAME: verse'


def test_a_fine_tune_keeps_the_base_body_and_starts_a_named_head(tmp_path):
    record = train("bert-shakespeare-genre", 1, tmp_path / "ft", steps=3)
    assert record["init"] == "zoo:bert-shakespeare/1" and record["data"] == "shakespeare-genre"
    config = json.loads((tmp_path / "ft" / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert [config["id2label"][str(i)] for i in range(3)] == list(GENRES)
    tuned, base = load_model(str(tmp_path / "ft")), load_model("zoo:bert-shakespeare/1")
    for name in ("embed.token", "layer.0.mlp.fc.weight", "layer.1.attn.q.weight"):
        moved = (tuned.tensors[name] - base.tensors[name]).norm() / base.tensors[name].norm()
        assert 0 < moved < 0.05, name  # three small steps from the base, not a fresh model
    assert {"head.pooler.weight", "head.weight"} <= set(tuned.tensors)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_shipped_classifiers_tell_genres_apart(seed):
    metrics = evaluate(load_model(f"zoo:bert-shakespeare-genre/{seed}"), load_data("shakespeare-genre"))
    assert metrics.accuracy > 0.75 and metrics.examples == 1800  # chance: 1/3


def test_an_aligned_pair_keeps_its_function_on_the_genre_task():
    a, b = load_model("zoo:bert-shakespeare-genre/0"), load_model("zoo:bert-shakespeare-genre/1")
    result = align(a, b, AlignConfig(method="weight", preset="all"))
    assert result.report.config["classes"]["residual"] == "perm"  # post-LN: the widest admissible
    assert result.report.function_gap_vs_b < 1e-5
    data = load_data("shakespeare-genre")
    before, after = evaluate(canonicalize(b), data, max_examples=256), evaluate(result.aligned, data, max_examples=256)
    assert after.loss == pytest.approx(before.loss, abs=1e-5) and after.accuracy == before.accuracy
    assert torch.isfinite(torch.tensor(after.loss))
