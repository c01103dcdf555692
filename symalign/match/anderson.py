"""Anderson mixing of weight matching's residual rotation, sweep to sweep (issue #73 item 1).

Coordinate descent moves the residual rotation R slowly along one direction for tens of sweeps (the
per-unit maps follow it). A sweep is a map R -> G(R); Anderson mixing (type II, window m) reads the last
few (R, G(R)) pairs in a chart of skew-symmetric matrices around the newest G(R) (the Cayley transform:
exact rotations back, no matrix logarithm) and extrapolates the next R as the combination whose
residual G(R) - R is least. The step is taken by acting on B with the rotation it amounts to, so the
other units see it at the next sweep. A sweep that starts from a mixed estimate and ends above the best
distance so far resets the mixing (weight._sweeps), so the stopping rule judges plain sweeps only.

Not the default: on the zoo pairs it saved no sweeps (window 3: 15-30 against 16-30, three pairs at the
30-sweep budget) and ended at a slightly higher distance on four of five pairs (docs/benchmarks.md). The
residual moves far each sweep (a Cayley step of 0.3-1 in Frobenius norm) while unit permutations still
flip, so the sweep map is not the smooth contraction mixing assumes.
`python -m symalign.experiments.residual_mixing` measures it."""

from __future__ import annotations

import torch

from symalign.match.mapped import MappedModel
from symalign.symmetry.groups import Dense
from symalign.symmetry.transform import Transform


def cayley(q: torch.Tensor) -> torch.Tensor:
    """The skew matrix A with Q = (I - A)(I + A)^-1 (Q a rotation without eigenvalue -1)."""
    eye = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device)
    return torch.linalg.solve((eye + q).mT, (eye - q).mT).mT


def uncayley(a: torch.Tensor) -> torch.Tensor:
    """The rotation (I - A)(I + A)^-1 of a skew matrix A."""
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    return torch.linalg.solve((eye + a).mT, (eye - a).mT).mT


class ResidualMixing:
    """Type-II Anderson mixing of the residual rotation over the last `window` sweeps."""

    def __init__(self, window: int = 3, regularise: float = 1e-10):
        self.window, self.regularise = window, regularise
        self.before: list[torch.Tensor] = []  # R at the start of each sweep
        self.after: list[torch.Tensor] = []  # R at its end, G(R)
        self.steps = 0
        self.mixed_last = False  # whether the sweep now running started from a mixed estimate
        self.pending = False

    def start_sweep(self, transform: Transform) -> None:
        self.mixed_last = self.pending
        self.pending = False
        element = transform.get("residual")
        self.before.append(element.dense() if isinstance(element, Dense) else None)

    def reset(self) -> None:
        self.before.clear()
        self.after.clear()

    def end_sweep(self, mapped: MappedModel, transform: Transform) -> bool:
        """Record G(R) and move R to the mixed estimate; False when there is nothing to mix yet."""
        element = transform.get("residual")
        if not isinstance(element, Dense) or element.kind != "orthogonal" or self.before[-1] is None:
            self.reset()
            return False
        self.after.append(element.dense())
        self.before, self.after = self.before[-self.window - 1:], self.after[-self.window - 1:]
        if len(self.after) < 2:
            return False
        base = self.after[-1]
        g = [cayley(base.mT @ y) for y in self.after]  # G(R_i) in the chart at the newest G(R)
        x = [cayley(base.mT @ r) for r in self.before]
        f = [gi - xi for gi, xi in zip(g, x)]
        d_f = torch.stack([(f[i + 1] - f[i]).flatten() for i in range(len(f) - 1)], 1)
        d_g = torch.stack([(g[i + 1] - g[i]).flatten() for i in range(len(g) - 1)], 1)
        gram = d_f.mT @ d_f
        gamma = torch.linalg.solve(gram + self.regularise * gram.trace() * torch.eye(len(gram), dtype=gram.dtype),
                                   d_f.mT @ f[-1].flatten())
        step = (g[-1].flatten() - d_g @ gamma).reshape(base.shape)
        step = (step - step.mT) / 2  # skew, up to round-off
        mixed = base @ uncayley(step)
        delta = Dense((mixed @ base.mT).to(element.matrix.dtype), "orthogonal")
        mapped.act({"residual": delta})
        transform["residual"] = Dense(mixed.to(element.matrix.dtype), "orthogonal")
        self.steps += 1
        self.pending = True
        return True
