"""Loss over the simplex of three models: θ(w) = w_A·θ_A + w_B·θ_B + w_C·θ_C on a barycentric grid.

The grid of resolution r holds the (r+1)(r+2)/2 points with w = (i, j, k)/r; its edges are the
pairwise interpolation paths at λ = j/r (so an edge equals `interpolation_curve` there), its
corners the models. Summaries, relative to the plane through the three corner losses (the
simplex analogue of the line between endpoint losses):
- max_barrier: the largest loss above the plane;
- near_zero_fraction: the share of grid points whose loss is at most ε above the plane (the
  "near-zero region" Theus et al. show learned matching widens);
- accuracy_barrier: the largest drop of accuracy below the plane through the corner accuracies,
  in percentage points, and accuracy_near_zero_fraction the share of points at most
  ACCURACY_EPSILON points below it (the accuracy surface's own near-zero region)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from symalign.errors import SymalignError
from symalign.landscape.evaluate import Evaluator
from symalign.landscape.interpolation import same_forms
from symalign.models.compat import check_compatible
from symalign.models.family import TransformerModel
from symalign.models.finite import require_finite

Progress = Callable[[int, int], None]
ACCURACY_EPSILON = 1.0  # percentage points: an accuracy this close to the corner plane counts as no drop


@dataclass
class Surface:
    weights: list[list[float]]  # one [w_A, w_B, w_C] per grid point
    loss: list[float]
    accuracy: list[float]
    corner_loss: list[float]
    max_loss: float
    max_barrier: float
    near_zero_fraction: float
    epsilon: float
    resolution: int
    examples: int
    accuracy_barrier: float = float("nan")  # percentage points below the corner accuracies' plane
    accuracy_near_zero_fraction: float = float("nan")
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.accuracy and math.isnan(self.accuracy_barrier):
            self.accuracy_barrier, self.accuracy_near_zero_fraction = accuracy_summary(self.weights, self.accuracy)

    @property
    def plane(self) -> list[float]:
        """The plane through the corner losses, at each grid point."""
        return [sum(w * c for w, c in zip(ws, self.corner_loss)) for ws in self.weights]

    @property
    def excess(self) -> list[float]:
        """Loss above the plane at each grid point (≤ 0 where the surface dips below it)."""
        return [l - p for l, p in zip(self.loss, self.plane)]

    def to_json(self) -> dict:
        out = asdict(self)
        out.update(out.pop("extra"))
        return out


def barycentric_grid(resolution: int) -> list[list[float]]:
    """[w_A, w_B, w_C] = [(r − j − k)/r, j/r, k/r] for j, k ≥ 0, j + k ≤ r (corners exact)."""
    if resolution < 1:
        raise SymalignError(f"--resolution must be at least 1 (the three corners); got {resolution}")
    r = resolution
    return [[(r - j - k) / r, j / r, k / r] for k in range(r + 1) for j in range(r + 1 - k)]


def accuracy_summary(weights: list[list[float]], accuracy: list[float]) -> tuple[float, float]:
    """(largest drop below the plane through the corner accuracies, in points; the share of grid points
    at most ACCURACY_EPSILON points below it): `summarize` of the accuracy's negative, in points."""
    _, _, drop, near = summarize(weights, [-100 * a for a in accuracy], ACCURACY_EPSILON)
    return drop, near


def summarize(weights: list[list[float]], loss: list[float], epsilon: float) -> tuple[list[float], float, float, float]:
    """Corner losses, max loss, max barrier above the corner plane, near-zero fraction."""
    corners = [loss[next(i for i, w in enumerate(weights) if w[c] == 1.0)] for c in range(3)]
    excess = [l - sum(w * c for w, c in zip(ws, corners)) for ws, l in zip(weights, loss)]
    near = sum(e <= epsilon for e in excess) / len(excess)
    return corners, max(loss), max(excess), near


def _mix(corners: list[dict[str, torch.Tensor]], w: list[float]) -> dict[str, torch.Tensor]:
    """Σ w_i θ_i, skipping zero weights (a third of the grid lies on an edge) and adding in place."""
    used = [(c, x) for c, x in zip(corners, w) if x != 0.0]
    out = {}
    for k in corners[0]:
        t = used[0][0][k] * used[0][1]
        for c, x in used[1:]:
            t.add_(c[k], alpha=x)
        out[k] = t
    return out


def simplex_surface(a: TransformerModel, b: TransformerModel, c: TransformerModel, data, resolution: int = 10,
                    epsilon: float = 0.05, max_examples: int | None = None, device: str | torch.device = "cpu",
                    form: str = "canonical", progress: Progress | None = None) -> Surface:
    """Loss and accuracy at every grid point (one module, parameters swapped in functionally)."""
    if not epsilon >= 0:
        raise SymalignError(f"--epsilon must be 0 or more; got {epsilon}")
    weights = barycentric_grid(resolution)
    check_compatible(a, b)
    check_compatible(a, c)
    for role, model in zip("ABC", (a, b, c)):
        require_finite(model, f"corner {role}")
    a, b, c = same_forms([a, b, c], form)
    evaluator = Evaluator(a, data, max_examples, device)
    corners = [evaluator.hf_params(m) for m in (a, b, c)]
    losses, accs = [], []
    for i, w in enumerate(weights):
        m = evaluator(_mix(corners, w))
        if not torch.isfinite(torch.tensor(m.loss)):
            raise SymalignError(f"the loss is not finite at weights {w}: a model holds NaN or infinite weights")
        losses.append(m.loss)
        accs.append(m.accuracy)
        if progress:
            progress(i + 1, len(weights))
    corner_loss, max_loss, max_barrier, near = summarize(weights, losses, epsilon)
    return Surface(weights, losses, accs, corner_loss, max_loss, max_barrier, near, epsilon, resolution,
                   evaluator.examples)
