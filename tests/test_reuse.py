"""Identical requests are computed once: a repeated request is answered from the run history, two
at once compute once, and anything that changes the numbers (a setting, the seed, the model's
files, a deleted run) computes again."""

from __future__ import annotations

import shutil
import threading

import pytest
from safetensors.torch import load_file, save_file

from symalign.match.config import AlignConfig
from symalign.runs import RunStore
from symalign.runs.reuse import fingerprint, request_key, served_once
from symalign.workflows.execute import align_then_vanilla
from symalign.zoo import resolve_zoo

WEIGHT = AlignConfig(method="weight", preset="permutations", data="digits")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    return RunStore(tmp_path / "home" / "runs.sqlite")


def ask(store, a="zoo:vit-digits/0", b="zoo:vit-digits/1", config=WEIGHT, points=3):
    return align_then_vanilla(a, b, config, points=points, max_examples=64, store=store, source="app", reuse=True)


def test_a_repeated_request_is_answered_from_the_history(store):
    first = ask(store)
    assert len(first) == 2 and len(store.list()) == 2
    assert ask(store) == first and len(store.list()) == 2  # nothing recorded, nothing computed
    changed = ask(store, points=5)  # another setting: computed
    assert set(changed).isdisjoint(first) and len(store.list()) == 4
    seeded = ask(store, config=AlignConfig(method="weight", preset="permutations", data="digits", seed=1))
    assert seeded[0] not in first and seeded[1] == first[1]  # another alignment, the same vanilla barrier (#56)
    assert len(store.list()) == 5
    store.delete(first[1])  # one of its runs is gone: the answer is incomplete, so it is computed again
    again = ask(store)
    assert set(again).isdisjoint(first) and store.get(again[0]).metrics["barrier"] == pytest.approx(
        store.get(first[0]).metrics["barrier"], abs=1e-9)
    assert align_then_vanilla("zoo:vit-digits/0", "zoo:vit-digits/1", WEIGHT, points=3, max_examples=64,
                              store=store) != again  # without reuse (the CLI, the API's default): computed


def test_a_model_is_named_by_its_files_not_its_path(tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(resolve_zoo("zoo:vit-digits/1"), copy)
    assert fingerprint(copy) == fingerprint("zoo:vit-digits/1")
    key = request_key("x", [copy], {"s": 1})
    assert key == request_key("x", ["zoo:vit-digits/1"], {"s": 1}) != request_key("x", [copy], {"s": 2})
    weights = load_file(copy / "model.safetensors")
    name = next(iter(weights))
    weights[name] = weights[name] * 1.001  # retrained under the same path
    save_file(weights, copy / "model.safetensors", metadata={"format": "pt"})
    assert request_key("x", [copy], {"s": 1}) != key


def test_identical_requests_at_once_compute_once(store):
    """Two visitors click the same thing together: one computes, the other waits and gets its runs."""
    computed, results, gate = [], [], threading.Barrier(2)

    def compute():
        computed.append(1)
        return ask(store)  # a real alignment and two curves (about a second each)

    def visitor():
        gate.wait()
        results.append(served_once(store, "the-same-request", compute))

    threads = [threading.Thread(target=visitor) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert len(computed) == 1 and len(results) == 2
    assert results[0][0] == results[1][0] and sorted(r[1] for r in results) == [False, True]
    assert len(store.list()) == 2


def test_the_vanilla_barrier_is_recorded_once_per_pair_whatever_the_alignment(store):
    """Issue #56: each Align click recorded the pair's vanilla barrier again (three identical "none" runs)."""
    first = ask(store)
    other = ask(store, config=AlignConfig(method="weight", preset="all", data="digits"))
    assert other[0] != first[0] and other[1] == first[1]
    assert len(store.list(kind="barrier")) == 1 and len(store.list(kind="align")) == 2
    assert ask(store, points=5)[1] != first[1]  # other points: another vanilla curve
