"""B under a transform recomputed from the original B, with its correlation and distance to A: the truth that
weight matching's running copy (its lagging groups, held tensors and folded cross-products) must equal."""

from __future__ import annotations

import torch

from symalign.match.solvers import correlation
from symalign.match.weight.descent import distance
from symalign.symmetry.transform import Transform, apply_unchecked


class FromScratch:
    """B under `transform` recomputed from the original B, with its correlation and distance to A."""

    def __init__(self, a, b, spec):
        self.a = {n: t.double() for n, t in a.tensors.items()}
        self.b = {n: t.double() for n, t in b.tensors.items()}
        self.spec = spec

    def moved(self, transform: Transform) -> dict[str, torch.Tensor]:
        return apply_unchecked(self.b, self.spec, transform)

    def correlation(self, transform: Transform, space: str) -> torch.Tensor:
        return correlation(self.a, self.moved(transform), self.spec, space)

    def distance(self, transform: Transform) -> float:
        return distance(self.a, self.moved(transform))
