"""The assignment solves that run beside a sweep (symalign.match.weight.assignment): at most `depth` wait at a time
(a GPT-2-small cost is 38 MB, and a first sweep's twelve queued costs were the run's peak memory), and a
bounded queue finds exactly what an unbounded one finds."""

from __future__ import annotations

import torch

from symalign.match.weight import assignment
from symalign.match.weight.descent import boundary_tensors, weight_match
from symalign.models import canonicalize, spec_of
from symalign.models.tiny import random_model, tiny_config


def run(monkeypatch, depth: int):
    """Weight matching of two 4-layer models with the solves in a 2-thread pool; (transform, history, the
    most solves that waited at once)."""
    config = tiny_config("gpt2", layers=4, width=32, heads=4, mlp=96, tied=False)
    a, b = (canonicalize(random_model(config, seed=s)) for s in (0, 1))
    monkeypatch.setattr(assignment, "solver_threads", lambda: 2)  # a pool even on a one-thread test worker
    init, submit, most = assignment.DeferredPermutations.__init__, assignment.DeferredPermutations.submit, [0]

    def bounded(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.depth = depth

    def counted(self, space, cost):
        submit(self, space, cost)
        most[0] = max(most[0], len(self.pending))

    monkeypatch.setattr(assignment.DeferredPermutations, "__init__", bounded)
    monkeypatch.setattr(assignment.DeferredPermutations, "submit", counted)
    transform, history = weight_match(a.tensors, b.tensors, spec_of(a), {"mlp": "perm", "heads": "perm",
                                      "residual": "orthogonal"}, boundary_tensors(a), max_sweeps=4, seed=3)
    return transform, history, most[0]


def test_a_bounded_queue_waits_and_finds_what_an_unbounded_one_finds(monkeypatch):
    free, free_history, free_most = run(monkeypatch, depth=100)
    bounded, bounded_history, bounded_most = run(monkeypatch, depth=1)
    assert free_most > 1, "the unbounded queue never held two solves: the bound was not exercised"
    assert bounded_most <= 1
    assert [h.distance for h in bounded_history] == [h.distance for h in free_history]
    for space, element in free.items():
        assert torch.equal(bounded[space].dense(), element.dense()), space


def test_the_default_depth_is_one_more_than_the_threads():
    pool = assignment.DeferredPermutations(None, None, {}, threads=2)
    try:
        assert pool.depth == 3
    finally:
        pool.close()
