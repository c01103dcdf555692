"""MLP tensors that an orthogonal residual's changes reach only when their own MLP next reads them.

Why: in a weight-matching sweep the residual's step rotated every MLP tensor and read them all for its
correlation, and the inner passes' hold read them all again, then rotated them once more: four passes
over a GPT-2-small layer's MLP weights a sweep (4 × 3.6 GMAC) beside the MLP's own cost product (14.5).
Kept as one group per MLP, in the frame they were last brought up to date in, the residual's step only
advances one matrix, and a group is rotated once a sweep, just before its MLP's cost product reads it.
Their share of the residual's correlation and of the distance stays exact (symalign.match.weight.lagging's algebra,
for many groups at once, each lagging by its own amount):

- D is the residual's change since the model was built; D_g is D when group g was last brought up to date;
  g's current tensors are E_g = D·D_gᵀ applied to its stored ones (orthogonal: a co and a contra axis both
  see E_g), and K_g = Σ A·B_storedᵀ along the residual axis;
- their share of the residual's correlation is Σ_g K_g·E_gᵀ = S·Dᵀ with S = Σ_g K_g·D_g;
- their share of ‖A − T(B)‖² is Σ_g ‖A‖² + ‖B‖² − 2⟨K_g, E_g⟩ = N − 2⟨S, D⟩.

Bringing g up to date (stored ← E_g·stored, D_g ← D) leaves K_g·D_g, hence S, as it is. A change of g's
stored tensors in their own frame (its MLP's permutation) adds ΔK_g·D_g, with ΔK_g formed from the columns
that changed only: once the permutations settle, a few units a sweep. D_g is a reference to D as it was,
not a copy: D is replaced at each residual step, so groups brought up to date between two steps share one."""

from __future__ import annotations

import torch

from symalign.match.solvers import unfold
from symalign.symmetry.groups import Dense

DENSE_UPDATE = 0.5  # form ΔK from every column once more than this share of them changed (a first sweep)


class LaggingGroups:
    """The groups of one orthogonal space (`space`, size n) and their share of its correlation and distance.
    `groups`: name -> the tensor names in it; `cross`: S at the start (Σ K_g, every D_g = D = I);
    `norms`: N, Σ ‖A‖² + ‖B‖² over the grouped tensors."""

    def __init__(self, space: str, groups: dict[str, frozenset[str]], cross: torch.Tensor, norms: float):
        self.space, self.groups = space, groups
        self.member = {name: group for group, names in groups.items() for name in names}
        self.names = frozenset(self.member)
        self.shares = cross.to(torch.float64)  # S [n, n]
        self.norms = norms
        self.turn = torch.eye(cross.shape[-1], dtype=torch.float64, device=cross.device)  # D
        self.at = {group: self.turn for group in groups}  # D_g

    def moved(self, element: Dense) -> None:
        """The space's element changed by `element` (orthogonal): every group lags by one more factor."""
        self.turn = element.dense().to(self.turn) @ self.turn  # a new tensor: the D_g still refer to the old

    def correlation(self) -> torch.Tensor:
        """The grouped tensors' share of the space's correlation C [1, n, n], as if brought up to date."""
        return (self.shares @ self.turn.T).unsqueeze(0)

    def squared_distance(self) -> float:
        """Σ ‖A − E_g·B_stored‖² over the grouped tensors."""
        return self.norms - 2 * float((self.shares * self.turn).sum())

    def lag(self, group: str) -> Dense | None:
        """The change E_g that brings `group` up to date (None when it is), and the group marked so."""
        at, self.at[group] = self.at[group], self.turn
        if at is self.turn:
            return None
        return Dense(self.turn @ at.T, "orthogonal")

    def rewritten(self, group: str, a: dict[str, torch.Tensor], old: dict[str, torch.Tensor],
                  new: dict[str, torch.Tensor], axes: dict[str, int], norm_change: float,
                  columns: torch.Tensor | None = None) -> None:
        """Some of `group`'s stored tensors changed from `old` to `new` in their own frame (the group is up to
        date): S gains ΔK_g·D_g and N `norm_change` (of Σ ‖B‖²). `a`: A's tensors; `axes`: each one's residual
        axis; `columns`: the columns of their residual unfolding that can have changed, when the caller knows
        (a permutation's moved units), else found by comparing."""
        dense, low = None, []  # ΔK from whole tensors; ΔK's factors (A's and the difference's changed columns)
        for name in old:
            ua = unfold(a[name], axes[name], None, new[name].dtype)
            un = unfold(new[name], axes[name], None, new[name].dtype)
            uo = unfold(old[name], axes[name], None, new[name].dtype)
            changed = columns if columns is not None else (un != uo).any(0).nonzero().squeeze(1)
            if changed.numel() > DENSE_UPDATE * un.shape[1]:
                product = (ua @ (un - uo).T).to(torch.float64)
                dense = product if dense is None else dense + product
            elif changed.numel():
                diff = un.index_select(1, changed) - uo.index_select(1, changed)
                ua_k = ua.index_select(1, changed)
                if 2 * changed.numel() <= ua.shape[0]:
                    low.append((ua_k.to(torch.float64), diff.to(torch.float64)))
                else:
                    product = (ua_k @ diff.T).to(torch.float64)
                    dense = product if dense is None else dense + product
        self.norms += norm_change
        # S gains ΔK·D_g. When k units changed, k under half of n, ΔK is low-rank (A's k columns times the
        # difference's) and is multiplied as A_k·(diff_kᵀ·D_g), O(k·n²) instead of a dense n³ product; when none
        # did (most MLPs after the first sweeps) nothing is multiplied: that n³ product of a zero ΔK was 3–6% of a
        # GPT-2-small run (docs/benchmarks.md, 2026-12-02)
        at = self.at[group]
        if dense is not None:
            self.shares = self.shares + dense @ at
        for ua_k, diff in low:
            self.shares = self.shares + ua_k @ (diff.T @ at)
