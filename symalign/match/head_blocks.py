"""Heads as blocks of a [heads·width, heads·width] statistic (correlation, cross product, distance).

Activation matching and OT-ACTS pair heads whole: they read, for A's head i and B's head j, the
width × width block (i, j) of a statistic over all heads' features. Pairing heads is then an
index map on blocks, never a reordering of activations."""

from __future__ import annotations

import torch

from symalign.match.heads import best_inner_similarity
from symalign.match.solvers import assignment


def blocks(matrix: torch.Tensor, width: int) -> torch.Tensor:
    """[n·width, m·width] -> [n, m, width, width]: block (i, j) at [i, j]."""
    n, m = matrix.shape[0] // width, matrix.shape[1] // width
    return matrix.reshape(n, width, m, width).transpose(1, 2)


def paired(matrix: torch.Tensor, width: int, b_heads: torch.Tensor) -> torch.Tensor:
    """[n, width, width]: A's head i against B's head b_heads[i]."""
    return blocks(matrix, width)[torch.arange(len(b_heads)), b_heads]


def two_stage(corr: torch.Tensor, width: int) -> torch.Tensor:
    """Verma & Elbayad's Head-Perm on a correlation over heads of `width` features: each head pair is
    scored by the best one-to-one matching of its features (an inner assignment), then heads are
    paired by an outer assignment on those scores. Returns B's head for each of A's."""
    return assignment(best_inner_similarity(blocks(corr, width), "perm"))
