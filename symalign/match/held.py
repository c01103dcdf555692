"""Tensors that weight matching's inner passes leave where they are: the residual's changes are kept
as one pending matrix instead of being applied to them.

Why: the slow part of coordinate descent is the coupling between the residual rotation and the maps
inside attention, not the MLP permutations, which settle within a few sweeps (docs/benchmarks.md).
Passes over only the residual and the attention units, with the MLPs held, converge that coupling
at a fraction of a sweep's cost, but only if they do not touch the MLP tensors: applying a rotation
to every MLP tensor, and reading them all for the residual's correlation, costs as much as the MLP
permutations' own cost products. With the MLPs held, their share of the residual's correlation is
K·Dᵀ (K = Σ A·Bᵀ along the residual axis, read once; D the rotations since) and of the distance
‖A‖² + ‖B‖² − 2⟨K, D⟩; D is applied to them once, when the passes end. Exact for an orthogonal
residual (a co and a contra axis both see D)."""

from __future__ import annotations

import torch

from symalign.symmetry.groups import Dense


class HeldTensors:
    """The held tensors' share of one orthogonal space's correlation and of the distance, under the
    change D of that space's element since they were held. `cross`: their K [n, n] when held;
    `norms`: Σ ‖A‖² + ‖B‖² over them."""

    def __init__(self, space: str, names: frozenset[str], cross: torch.Tensor, norms: float):
        self.space, self.names, self.cross, self.norms = space, names, cross, norms
        self.change = torch.eye(cross.shape[-1], dtype=torch.float64, device=cross.device)

    def moved(self, element: Dense) -> None:
        """The space's element changed by `element` (an orthogonal matrix): one more factor of D."""
        self.change = element.dense().to(self.change) @ self.change

    def correlation(self) -> torch.Tensor:
        """The held tensors' share of C [1, n, n], as if D had been applied to them."""
        return (self.cross @ self.change.T).unsqueeze(0)

    def squared_distance(self) -> float:
        """Σ ‖A − D·B‖² over the held tensors."""
        return self.norms - 2 * float((self.cross * self.change).sum())

    def release(self) -> Dense:
        """The change to apply to the held tensors now that the passes are over."""
        return Dense(self.change, "orthogonal")
