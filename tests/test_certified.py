"""The warm-started, certified assignment (symalign.match.weight.assignment) returns what scipy's dense
solver returns: the same perm where the optimum is unique, the same cost where it is not; a hint
only changes how fast, never what."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from symalign.match.weight import assignment
from symalign.match.weight.assignment import Hint, certified_assignment, dense_assignment


@pytest.fixture(autouse=True)
def certify_small_problems(monkeypatch):
    """The tests' sizes are below the size the solver certifies by default (dense is fast there)."""
    monkeypatch.setattr(assignment, "SMALL", 64)


def total(cost: torch.Tensor, perm: np.ndarray) -> float:
    return float(cost[torch.arange(cost.shape[0]), torch.as_tensor(perm)].sum())


def assert_optimal(cost: torch.Tensor, perm: np.ndarray) -> None:
    reference = dense_assignment(cost)
    assert sorted(perm.tolist()) == list(range(cost.shape[0])), "not a permutation"
    assert total(cost, perm) == pytest.approx(total(cost, reference), rel=1e-9, abs=1e-9)


def drifted(cost: torch.Tensor, perm: np.ndarray, rng: np.random.Generator, noise: float) -> torch.Tensor:
    """The next sweep's cost: columns permuted as B was, plus a small change."""
    return cost[:, torch.as_tensor(perm)] + noise * torch.as_tensor(rng.standard_normal(cost.shape))


@pytest.mark.parametrize("kind", ["random", "planted"])
def test_warm_solves_agree_with_scipy_and_are_certified(kind):
    rng = np.random.default_rng(0)
    n = 400
    cost = torch.as_tensor(rng.standard_normal((n, n)))
    if kind == "planted":
        cost += 3 * torch.eye(n)[torch.as_tensor(rng.permutation(n))]
    assignment.STATS.clear()
    perm, hint = certified_assignment(cost)
    assert np.array_equal(perm, dense_assignment(cost))
    assert hint is not None
    for _ in range(3):
        cost = drifted(cost, perm, rng, 0.02)
        perm, hint = certified_assignment(cost, None, Hint(hint.potentials[perm]))
        assert np.array_equal(perm, dense_assignment(cost))  # continuous costs: the optimum is unique
    assert assignment.STATS["certified"] >= 2, dict(assignment.STATS)  # the fast path did the work


@pytest.mark.parametrize("kind", ["random", "low rank", "planted"])
def test_a_first_solve_is_certified_from_zero_potentials(kind):
    """No hint (a first sweep, a one-pass run): the rounds start from zero potentials and prove scipy's
    answer optimal without the dense solver, on costs shaped like an MLP's (rank below n, as
    A_in·B_inᵀ + A_outᵀ·B_out is), in float32 as weight matching hands them over."""
    rng = np.random.default_rng(5)
    n = 512
    cost = torch.as_tensor(rng.standard_normal((n, n)), dtype=torch.float32)
    if kind == "low rank":
        cost = torch.as_tensor(rng.standard_normal((n, 128)) @ rng.standard_normal((128, n)), dtype=torch.float32)
    if kind == "planted":
        cost += 3 * torch.eye(n)[torch.as_tensor(rng.permutation(n))]
    assignment.STATS.clear()
    perm, hint = certified_assignment(cost)
    assert np.array_equal(perm, dense_assignment(cost))
    assert assignment.STATS["dense"] == 0 and assignment.STATS["certified"] == 1, dict(assignment.STATS)
    again, _ = certified_assignment(cost, None, hint)  # its potentials are a hint for the next solve
    assert np.array_equal(again, perm)


def test_a_first_solve_the_candidates_miss_goes_dense(monkeypatch):
    """Zero potentials, one candidate a row and one round cannot prove a random cost's optimum: the dense
    solver decides, and its answer is scipy's."""
    rng = np.random.default_rng(6)
    cost = torch.as_tensor(rng.standard_normal((300, 300)))
    monkeypatch.setattr(assignment, "CANDIDATES", 1)
    monkeypatch.setattr(assignment, "ROUNDS", 1)
    assignment.STATS.clear()
    perm, _ = certified_assignment(cost)
    assert np.array_equal(perm, dense_assignment(cost))
    assert assignment.STATS["dense"] == 1


def test_a_round_that_leaves_most_rows_violating_goes_dense_at_once(monkeypatch):
    """The candidates far from the optimum (here: any violating row counts as too many) end the rounds after
    the first: scipy decides, with nothing spent on rounds that would cost more than it."""
    rng = np.random.default_rng(7)
    cost = torch.as_tensor(rng.standard_normal((300, 300)))
    assignment.STATS.clear()
    certified_assignment(cost)
    assert assignment.STATS["rounds"] > 1, dict(assignment.STATS)  # by default this cost takes more than one round
    monkeypatch.setattr(assignment, "FAR", 0.0)
    assignment.STATS.clear()
    perm, _ = certified_assignment(cost)
    assert np.array_equal(perm, dense_assignment(cost))
    assert assignment.STATS["rounds"] == 1 and assignment.STATS["dense"] == 1, dict(assignment.STATS)


def test_a_wrong_hint_costs_time_not_the_answer():
    rng = np.random.default_rng(1)
    n = 300
    cost = torch.as_tensor(rng.standard_normal((n, n)))
    bad = Hint(rng.standard_normal(n) * 10)
    perm, _ = certified_assignment(cost, rng.permutation(n), bad)
    assert np.array_equal(perm, dense_assignment(cost))


def test_ties_give_an_assignment_of_equal_cost():
    rng = np.random.default_rng(2)
    n = 300
    cost = torch.as_tensor(rng.integers(0, 3, (n, n)).astype(np.float64))  # many optimal assignments
    perm, hint = certified_assignment(cost)
    perm, _ = certified_assignment(cost, None, hint)
    assert_optimal(cost, perm)


def test_the_certificate_rejects_a_guess_that_is_not_optimal(monkeypatch):
    """With a single round the sparse problem cannot see the optimum's edges: the dense solver
    must decide (a certificate that passed anyway would return the guess)."""
    rng = np.random.default_rng(3)
    n = 300
    cost = torch.as_tensor(rng.standard_normal((n, n)))
    monkeypatch.setattr(assignment, "CANDIDATES", 1)
    monkeypatch.setattr(assignment, "ROUNDS", 1)
    assignment.STATS.clear()
    guess = rng.permutation(n)
    perm, _ = certified_assignment(cost, guess, Hint(np.zeros(n)))
    assert np.array_equal(perm, dense_assignment(cost))
    assert assignment.STATS["dense"] == 1


def test_small_problems_go_to_scipy():
    cost = torch.randn(50, 50, dtype=torch.float64)
    perm, hint = certified_assignment(cost)
    assert hint is None and np.array_equal(perm, dense_assignment(cost))


def test_weight_matching_finds_the_same_permutations_with_and_without_warm_starts(monkeypatch):
    """A model whose MLP is wide enough for the certified path: every permutation identical to
    the dense solver's, and the distance equal."""
    from symalign.match.weight.descent import boundary_tensors, weight_match
    from symalign.models import canonicalize, spec_of
    from symalign.models.tiny import random_model, tiny_config

    config = tiny_config("gpt2", layers=2, width=64, heads=4, mlp=320, vocab=97, context=16)
    a = canonicalize(random_model(config, seed=0))
    b = canonicalize(random_model(config, seed=1))
    classes = {"mlp": "perm", "heads": "perm", "residual": "orthogonal"}
    spec = spec_of(a)

    def run():
        assignment.STATS.clear()
        transform, history = weight_match(a.tensors, b.tensors, spec, classes, boundary_tensors(a), max_sweeps=6)
        return transform, history, dict(assignment.STATS)

    fast, fast_history, stats = run()
    assert stats.get("certified", 0) > 0, stats
    monkeypatch.setattr(assignment, "SMALL", 10**9)
    dense, dense_history, _ = run()
    for space in ("layer.0.mlp", "layer.1.mlp"):
        assert torch.equal(fast[space].perm, dense[space].perm), space
    assert fast_history[-1].distance == pytest.approx(dense_history[-1].distance, rel=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_dense_solver_is_scipys_maximum_and_leaves_its_cost_alone(dtype):
    """symalign's assignment minimises −cost from its own float64 copy (one copy, not two): the same perm as
    scipy's `maximize=True`, ties included, and the caller's cost untouched."""
    from scipy.optimize import linear_sum_assignment

    from symalign.match.solvers import assignment

    g = torch.Generator().manual_seed(0)
    ties = torch.randint(0, 3, (300, 300), generator=g).to(dtype)
    for cost in (torch.randn(300, 300, generator=g, dtype=dtype), ties):
        before = cost.clone()
        rows, cols = linear_sum_assignment(cost.numpy(), maximize=True)
        assert torch.equal(assignment(cost), torch.as_tensor(cols[np.argsort(rows)]))
        assert torch.equal(cost, before)


def test_a_guess_worse_than_the_sparse_optimum_gets_no_bellman_ford(monkeypatch):
    """Bellman-Ford on a guess that is not optimal runs all its passes before it says so (a third of a GPT-2-small
    run's solver time); the sparse optimum's weight tells at once, so the guess is never given to it."""
    rng = np.random.default_rng(4)
    n = 300
    cost = torch.as_tensor(rng.standard_normal((n, n)))
    guess = rng.permutation(n)
    tried = []
    potentials = assignment._potentials

    def recording(n, rows, cols, weights, sigma, start, scale):
        tried.append(np.array_equal(sigma, guess))
        return potentials(n, rows, cols, weights, sigma, start, scale)

    monkeypatch.setattr(assignment, "_potentials", recording)
    perm, _ = certified_assignment(cost, guess, Hint(np.zeros(n)))
    assert np.array_equal(perm, dense_assignment(cost))
    assert tried and not any(tried), tried


def test_a_guess_tied_with_the_optimum_is_kept():
    """Where several assignments are optimal the guess (the previous sweep's) stays, as when it was tried first:
    B does not move between equally good permutations from one sweep to the next."""
    rng = np.random.default_rng(5)
    n = 200
    cost = torch.ones(n, n, dtype=torch.float64)  # every permutation is optimal
    guess = rng.permutation(n)
    perm, _ = certified_assignment(cost, guess, Hint(np.zeros(n)))
    assert np.array_equal(perm, guess)
