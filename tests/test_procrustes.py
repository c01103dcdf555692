"""The residual's constrained Procrustes (rotations with Q·1 = 1, which LayerNorm admits): the maximiser of
tr(Qᵀ C) over that set, an exact rotation that keeps 1, and the planted map back from C = Q·B·Bᵀ, at the zoo's
widths and above the size where its SVD runs on torch's threads."""

from __future__ import annotations

import pytest
import torch

from symalign.match.solvers import SERIAL_SVD, procrustes_fixing_ones
from symalign.symmetry.random import orthogonal_fixing_ones, random_orthogonal

WIDE = 2 * SERIAL_SVD + 44  # above the one-thread SVD size


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("n", [2, 3, 64, WIDE])
def test_residual_procrustes_is_a_rotation_that_keeps_ones(n):
    q = procrustes_fixing_ones(torch.randn(n, n, generator=_generator(n), dtype=torch.float64))
    ones = torch.ones(n, dtype=torch.float64)
    assert float((q @ ones - ones).abs().max()) < 1e-12
    assert float((q.T @ q - torch.eye(n, dtype=torch.float64)).abs().max()) < 1e-12


@pytest.mark.parametrize("n", [64, WIDE])
def test_residual_procrustes_recovers_a_planted_rotation_fixing_ones(n):
    g = _generator(5)
    planted = orthogonal_fixing_ones(random_orthogonal(n - 1, g))
    b = torch.randn(n, 3 * n, generator=g, dtype=torch.float64)
    c = (planted @ b) @ b.T  # Σ a bᵀ over slices with A = Q·B
    # up to the tie-break's pull towards the identity: 1e-7 of σ_max, against B·Bᵀ's σ_min near a tenth of it
    assert float((procrustes_fixing_ones(c) - planted).abs().max()) < 1e-5


def test_residual_procrustes_beats_every_rotation_fixing_ones_it_is_tried_against():
    n = 40
    c = torch.randn(n, n, generator=_generator(6), dtype=torch.float64)
    best = float(torch.trace(procrustes_fixing_ones(c).T @ c))
    g = _generator(7)
    for _ in range(20):
        other = orthogonal_fixing_ones(random_orthogonal(n - 1, g))
        assert float(torch.trace(other.T @ c)) < best


def test_one_dimensional_residual_is_the_identity():
    assert torch.equal(procrustes_fixing_ones(torch.tensor([[3.0]], dtype=torch.float64)),
                       torch.ones(1, 1, dtype=torch.float64))
