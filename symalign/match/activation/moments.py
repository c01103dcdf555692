"""Second moments of two models' activations, accumulated batch by batch.

Every activation-matching solve reads second moments only: Pearson correlations (residual and
MLP assignments, two-stage head scores), raw cross products Σ aᵀb (Procrustes, the inner
permutations, rotary fits), B's own Gram blocks (invertible maps), norms (rescalings), and
OT-ACTS' distances between standardised units, ‖z_a − z_b‖² = Σz_a² + Σz_b² − 2·Σz_a·z_b.
Those sums add up over batches, so A and B run in lockstep over the data and only one batch of
each is ever held: peak memory is the statistics (GPT-2-small: about 1.1 GB, mostly the twelve
3072² MLP correlations) instead of every layer's activations of both models (170 bytes per
parameter at 256 examples).

Numerics: the sums are float64. Each batch is shifted (in float64) by the first batch's column
means before its products (a stream with a large mean would otherwise lose its covariance to
cancellation),
and the raw moments are recovered exactly from the shifted ones. A batch's products run in
float64 below LARGE_MODEL_PARAMETERS and in float32 above (two to three times faster on a CPU;
each batch is a few hundred rows, so float32 rounding stays near 1e-7 of a moment)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from symalign.match.activation.capture import activation_batches
from symalign.match.solvers import assignment
from symalign.match.weight.units import best_inner_similarity
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models.family import TransformerModel

HEAD_KEYS = (".heads", ".q", ".k")  # keys whose features are heads × d_head: B's Gram blocks are kept per head


def pearson(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[n, n] correlation of a's columns with b's columns (rows are samples)."""
    a = (a - a.mean(0)) / a.std(0).clamp_min(1e-8)
    b = (b - b.mean(0)) / b.std(0).clamp_min(1e-8)
    return a.T @ b / a.shape[0]


def _outer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x[:, None] * y[None, :]


@dataclass
class PairMoments:
    """Sums over rows of A's activations a [rows, n_a] and B's b [rows, n_b] at one point, both shifted by
    fixed column means s_a, s_b: Σ(a − s_a), Σ(a − s_a)², Σ(a − s_a)ᵀ(b − s_b), the same for b, and
    (head points) B's per-head Gram blocks Σ(b_h − s)ᵀ(b_h − s)."""

    shift_a: torch.Tensor
    shift_b: torch.Tensor
    sum_a: torch.Tensor
    sum_b: torch.Tensor
    sq_a: torch.Tensor
    sq_b: torch.Tensor
    cross: torch.Tensor
    gram_b: torch.Tensor | None = None  # [heads, d_head, d_head]
    rows: int = 0

    @classmethod
    def start(cls, a: torch.Tensor, b: torch.Tensor, block: int | None = None) -> PairMoments:
        """Empty sums shifted by this (first) batch's column means; `block`: keep B's Gram per `block` columns."""
        na, nb = a.shape[1], b.shape[1]
        zeros = lambda *s: torch.zeros(*s, dtype=torch.float64)  # noqa: E731
        return cls(a.double().mean(0), b.double().mean(0), zeros(na), zeros(nb), zeros(na), zeros(nb), zeros(na, nb),
                   zeros(nb // block, block, block) if block else None)

    def add(self, a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype = torch.float64) -> None:
        """Add a batch (rows of a and b are the same positions); the products run in `dtype`."""
        x, y = (a.double() - self.shift_a).to(dtype), (b.double() - self.shift_b).to(dtype)
        self.rows += x.shape[0]
        self.sum_a += x.sum(0, dtype=torch.float64)
        self.sum_b += y.sum(0, dtype=torch.float64)
        self.sq_a += (x * x).sum(0, dtype=torch.float64)
        self.sq_b += (y * y).sum(0, dtype=torch.float64)
        self.cross += x.T @ y
        if self.gram_b is not None:
            heads, block = self.gram_b.shape[:2]
            per_head = y.reshape(-1, heads, block).transpose(0, 1)
            self.gram_b += per_head.mT @ per_head

    # centred (shift-free) statistics
    def _centred_cross(self) -> torch.Tensor:
        ma, mb = self.sum_a / self.rows, self.sum_b / self.rows
        return self.cross / self.rows - _outer(ma, mb)

    def _variances(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Biased (1/rows) variances of A's and B's columns."""
        n = self.rows
        return ((self.sq_a / n - (self.sum_a / n) ** 2).clamp_min(0),
                (self.sq_b / n - (self.sum_b / n) ** 2).clamp_min(0))

    def stds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Unbiased standard deviations of A's and B's columns (as torch.std)."""
        n = self.rows
        va, vb = self._variances()
        return (va * n / max(n - 1, 1)).sqrt(), (vb * n / max(n - 1, 1)).sqrt()

    def pearson(self) -> torch.Tensor:
        """[n_a, n_b] as `pearson` on the samples (unbiased stds, clamped at 1e-8, over rows)."""
        sa, sb = (s.clamp_min(1e-8) for s in self.stds())
        return self._centred_cross() / _outer(sa, sb)

    def standardised_sq_distances(self) -> torch.Tensor:
        """[n_a, n_b] ‖z_a,i − z_b,j‖² between standardised columns z = (x − mean) / std (as OT-ACTS' features)."""
        n = self.rows
        sa, sb = (s.clamp_min(1e-8) for s in self.stds())
        va, vb = self._variances()
        return (_outer(n * va / sa**2, torch.ones_like(sb)) + _outer(torch.ones_like(sa), n * vb / sb**2)
                - 2 * n * self.pearson()).clamp_min(0)

    # raw (uncentred) statistics
    def raw_cross(self) -> torch.Tensor:
        """Σ aᵀb over the rows."""
        return (self.cross + _outer(self.sum_a, self.shift_b) + _outer(self.shift_a, self.sum_b)
                + self.rows * _outer(self.shift_a, self.shift_b))

    def raw_squares(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ a² and Σ b² per column."""
        return (self.sq_a + 2 * self.shift_a * self.sum_a + self.rows * self.shift_a**2,
                self.sq_b + 2 * self.shift_b * self.sum_b + self.rows * self.shift_b**2)

    def raw_gram_b(self) -> torch.Tensor:
        """Σ b_hᵀ b_h per head [heads, d_head, d_head]."""
        heads, block = self.gram_b.shape[:2]
        s, t = self.shift_b.reshape(heads, block), self.sum_b.reshape(heads, block)
        return (self.gram_b + s[:, :, None] * t[:, None, :] + t[:, :, None] * s[:, None, :]
                + self.rows * s[:, :, None] * s[:, None, :])


def moments_dtype(model: TransformerModel) -> torch.dtype:
    """float32 products at real scale, float64 below (the zoo's numbers do not move)."""
    params = sum(t.numel() for t in model.tensors.values())
    return torch.float32 if params > LARGE_MODEL_PARAMETERS else torch.float64


def pair_moments(a: TransformerModel, b: TransformerModel, data, max_examples: int | None = 256,
                 device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> dict[str, PairMoments]:
    """PairMoments at every capture point (symalign.match.activation.capture), A and B run batch by batch in lockstep
    on the same data (so their rows are the same positions)."""
    dtype = dtype or moments_dtype(a)
    out: dict[str, PairMoments] = {}
    for batch_a, batch_b in zip(activation_batches(a, data, max_examples, device),
                                activation_batches(b, data, max_examples, device)):
        for key in list(batch_a):
            x, y = batch_a.pop(key), batch_b.pop(key)
            if key not in out:
                out[key] = PairMoments.start(x, y, a.dims.d_head if key.endswith(HEAD_KEYS) else None)
            out[key].add(x, y, dtype)
    return out


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
