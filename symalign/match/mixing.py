"""Where on the path (two models) or the simplex (N models) the learned objective is evaluated.

Each training step draws mixing weights w (w_i ≥ 0, Σ w_i = 1) and trains on θ(w) = Σ w_i T_i(θ_i):
for a pair w = (1 − λ, λ) with λ from one of LAMBDA_SAMPLERS (Theus et al. use U(0.4, 0.6));
for N ≥ 3 models w ~ Dirichlet(α·1) (Theus et al.: α = 0.1). The stopping rule instead reads a
fixed set of points (CHECK points), so its value is a deterministic function of the transforms."""

from __future__ import annotations

import itertools

import numpy as np

from symalign.errors import SymalignError
from symalign.match.learned_options import LAMBDA_SAMPLERS
from symalign.match.options import declared_default


class WeightSampler:
    """Draws mixing weights from its own seeded generator (no global random state)."""

    def __init__(self, n_models: int, lambdas: str = declared_default("lambdas"),
                 alpha: float = declared_default("alpha"), seed: int = 0):
        if n_models < 2:
            raise SymalignError("learned matching needs at least two models")
        if lambdas not in LAMBDA_SAMPLERS:
            raise SymalignError(f"unknown λ distribution {lambdas!r}; choose from {', '.join(LAMBDA_SAMPLERS)}")
        if not alpha > 0:
            raise SymalignError(f"--alpha must be positive (the Dirichlet concentration); got {alpha}")
        self.n, self.lambdas, self.alpha = n_models, lambdas, alpha
        self.rng = np.random.default_rng(seed)

    def __call__(self) -> list[float]:
        if self.n > 2:
            return [float(w) for w in self.rng.dirichlet([self.alpha] * self.n)]
        u = float(self.rng.random())
        lam = {"uniform_mid": 0.4 + 0.2 * u, "half": 0.5, "uniform": u,
               "normal": min(1.0, max(0.0, 0.5 + 0.1 * float(self.rng.standard_normal())))}[self.lambdas]
        return [1.0 - lam, lam]


def check_points(n_models: int, where: str = "path") -> list[list[float]]:
    """Fixed points the stopping rule watches: λ = 0.25, 0.5, 0.75 for a pair; for N models the
    centroid and every edge midpoint (where barriers peak once the corners are matched).
    `midpoint`: λ = 0.5 (the centroid) alone, for checks that would cost more than the steps."""
    if where == "midpoint":
        return [[1.0 / n_models] * n_models]
    if n_models == 2:
        return [[0.75, 0.25], [0.5, 0.5], [0.25, 0.75]]
    points = [[1.0 / n_models] * n_models]
    for i, j in itertools.combinations(range(n_models), 2):
        w = [0.0] * n_models
        w[i] = w[j] = 0.5
        points.append(w)
    return points
