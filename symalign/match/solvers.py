"""Solve for one space's group element from its cross-correlation with the target.

C[i, j] = ⟨a_i, b_j⟩ sums, over every tensor the spec ties to the space, the products of
A's slice i and B's slice j along that axis (B with every *other* space already mapped).
Maximising ⟨A, T(B)⟩ over the space's group is then a linear assignment (permutations) or an
orthogonal Procrustes problem (G = U Vᵀ from C = U S Vᵀ). Both read the same C."""

from __future__ import annotations

from collections.abc import Collection
from contextlib import nullcontext

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from symalign.symmetry.groups import (
    CO,
    CONTRA,
    DIAG,
    Dense,
    GroupElement,
    Permutation,
    ScaledPermutation,
    rotary_matrix,
    rotary_parts,
)
from symalign.symmetry.random import ones_complement_basis
from symalign.symmetry.spec import SymmetrySpec
from symalign.torch_threads import one_torch_thread

Tensors = dict[str, torch.Tensor]


def unfold(t: torch.Tensor, axis: int, batch_axis: int | None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """[n, rest] (or [count, n, rest] with a batch axis) view of a tensor along a space's axis, in `dtype`."""
    t = t.to(dtype)
    if batch_axis is None:
        return t.movedim(axis, 0).reshape(t.shape[axis], -1)
    moved = t.movedim((batch_axis, axis), (0, 1))
    return moved.reshape(moved.shape[0], moved.shape[1], -1)


def slices(a: Tensors, b: Tensors, spec: SymmetrySpec, space: str, variances=(CO, CONTRA, DIAG),
           names: Collection[str] | None = None, dtype: torch.dtype = torch.float64):
    """Yield (A slices, B slices) in `dtype` for every tensor axis of `space` with one of `variances`
    (of the tensors in `names` only, when given)."""
    parent = spec.spaces[space].batched_by
    for name, axis, tag in spec.axes_of(space):
        if tag.variance not in variances or names is not None and name not in names:
            continue
        tags = spec.tensors[name]
        batch_axis = next(i for i, tg in enumerate(tags) if tg is not None and tg.space == parent) if parent else None
        yield unfold(a[name], axis, batch_axis, dtype), unfold(b[name], axis, batch_axis, dtype)


def cross(ua: torch.Tensor, ub: torch.Tensor, into: torch.Tensor | None = None) -> torch.Tensor:
    """[count, n, n] products of two unfolded tensors' slices: the cost matmul of every solver
    (added in place to `into` when given: no temporary, no separate addition pass; an `into` wider
    than the slices gets the product computed in the slices' precision, then added in its own)."""
    if into is None:
        return (ua @ ub.mT) if ua.dim() == 3 else (ua @ ub.T)[None]
    if into.dtype != ua.dtype:  # add_ widens as it adds: no converted copy of the product
        return into.add_(cross(ua, ub))
    if ua.dim() == 3:
        return into.baddbmm_(ua, ub.mT)
    into[0].addmm_(ua, ub.T)
    return into


WIDE_SUM_ENTRIES = 1 << 20  # correlations at least this large are summed in the compute precision


def correlation(a: Tensors, b: Tensors, spec: SymmetrySpec, space: str, variances=(CO, CONTRA, DIAG),
                dtype: torch.dtype = torch.float64, widen: bool = True) -> torch.Tensor:
    """C [count, n, n] with C[h, i, j] = Σ ⟨a_hi, b_hj⟩ over the space's tensor axes, returned in float64;
    each tensor's product in `dtype` (float32 halves the cost matmuls' time on a CPU). Their sum is in
    float64, except for a correlation of WIDE_SUM_ENTRIES or more (a GPT-2 MLP's 3072², a residual of
    1024 or wider): there the products are summed in place in `dtype` (addmm), which saves a float64
    temporary and a widening pass per tensor, a third of the product's time (docs/benchmarks.md), at
    the products' own rounding. Smaller ones (rotations inside heads, a residual of 768) keep the float64
    sum: summed in float32, a vit-digits head rotation moved by 1e-4, and there the sum costs little.
    `widen=False` returns such a sum as it was summed, for a caller that widens it later (exact): an
    assignment solved in another thread, so a queued GPT-2 MLP cost holds 38 MB instead of 75."""
    sp = spec.spaces[space]
    total = None
    for ua, ub in slices(a, b, spec, space, variances, dtype=dtype):
        if total is None:
            total = cross(ua, ub)
            if total.numel() < WIDE_SUM_ENTRIES:
                total = total.to(torch.float64)
        else:
            cross(ua, ub, into=total)
    if total is None:
        return torch.zeros(sp.count, sp.size, sp.size, dtype=torch.float64, device=_device(a))
    return total.to(torch.float64) if widen else total


def _device(t: Tensors) -> torch.device:
    return next(iter(t.values())).device


def assignment(cost: torch.Tensor) -> torch.Tensor:
    """perm maximising Σ_i cost[i, perm[i]] (scipy's linear_sum_assignment, minimising −cost: the same answer as
    its `maximize=True`, from one float64 copy negated in place instead of a widened copy and scipy's own
    negated one; two at once held 0.3 GB of a GPT-2-small first sweep's peak)."""
    negated = cost.detach().to("cpu", torch.float64, copy=True).neg_()
    rows, cols = linear_sum_assignment(negated.numpy())
    return torch.as_tensor(cols[np.argsort(rows)], dtype=torch.long)


def permutation_matrices(costs: torch.Tensor) -> Dense:
    """One permutation per [n, n] cost in a batch (per head or per key/value group), as matrices."""
    eye = torch.eye(costs.shape[-1], dtype=torch.float64)
    return Dense(torch.stack([eye[assignment(c)] for c in costs]).to(costs.device), "perm")


SERIAL_SVD = 128  # Procrustes of matrices up to this size runs on one CPU thread
TIE_BREAK = 1e-7  # relative weight of the identity added to a Procrustes correlation


def procrustes(c: torch.Tensor) -> torch.Tensor:
    """argmax over orthogonal G of tr(Gᵀ C): U Vᵀ (batched).

    When C is rank-deficient (e.g. the few boundary tensors of a small ViT constrain only part of
    the residual) the maximiser is not unique and plain SVD would pick the unconstrained part from
    round-off, which differs with the thread count. Adding ε·I (ε = 1e-7·σ_max) breaks the tie
    towards the identity (leave what no tensor constrains where it is) and makes C nonsingular,
    whose polar factor is unique and stable."""
    # small SVDs on one CPU thread: as fast, the same bits, and no team to wait for beside a busy solver
    # thread (symalign.torch_threads; measured up to 128 on 2 cores: larger ones gain from threads)
    with one_torch_thread() if c.device.type == "cpu" and c.shape[-1] <= SERIAL_SVD else nullcontext():
        scale = torch.linalg.matrix_norm(c, ord=2, keepdim=True) if c.shape[-1] else c
        eye = torch.eye(c.shape[-1], dtype=c.dtype, device=c.device)
        u, _, vh = torch.linalg.svd(c + TIE_BREAK * scale * eye)
        return u @ vh


def procrustes_fixing_ones(c: torch.Tensor) -> torch.Tensor:
    """Procrustes restricted to Q with Q·1 = 1 (LayerNorm-compatible residual rotations)."""
    basis = ones_complement_basis(c.shape[-1]).to(c.device)
    inner = (basis.T @ c @ basis)[1:, 1:]
    one = torch.ones(1, 1, dtype=torch.float64, device=c.device)
    return basis @ torch.block_diag(one, procrustes(inner)) @ basis.T


def solve(cls: str, a: Tensors, b: Tensors, spec: SymmetrySpec, space: str,
          c: torch.Tensor | None = None) -> GroupElement:
    """The element of class `cls` that best maps B's space onto A's, all else held fixed (`c`: the
    correlation of A and B when the caller already has it; permutations and orthogonal maps read only it)."""
    sp = spec.spaces[space]
    batched = sp.batched_by is not None
    if cls == "scaled_perm" and not batched:
        return _scaled_permutation(a, b, spec, space)
    if cls == "invertible":
        return Dense(_least_squares(a, b, spec, space)[0 if not batched else slice(None)], "invertible")
    if cls == "rescale":
        return Dense(_rescale(a, b, spec, space), "rescale")
    if cls == "rotary":
        co, contra = list(slices(a, b, spec, space, (CO,))), list(slices(a, b, spec, space, (CONTRA,)))
        m = rotary_fit(co, contra, sp.rotated_dims)
        return Dense(m if batched else m[0], "rotary")
    if c is None:
        c = correlation(a, b, spec, space)
    if cls == "orthogonal+rescale":  # Procrustes, then the scale that best fits after it (Zhang et al.)
        g = procrustes(c)
        g = rotation_scale(a, b, spec, space, g)[:, None, None] * g
        return Dense(g if batched else g[0], cls)
    if cls == "perm" and not batched:
        return Permutation(assignment(c[0]))
    if cls == "perm":
        return permutation_matrices(c)
    if cls == "orthogonal":
        if sp.fixes_ones:
            return Dense(procrustes_fixing_ones(c[0]), "orthogonal")
        g = procrustes(c)
        return Dense(g if batched else g[0], "orthogonal")
    raise ValueError(f"weight matching has no solver for {cls} on {space}")


def _batched(u: torch.Tensor) -> torch.Tensor:
    return u if u.dim() == 3 else u[None]


RotaryMoments = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # Σ a bᵀ [count, n, n], Σ a², Σ b² [count, n]


def rotary_fit(co: list[tuple[torch.Tensor, torch.Tensor]],
               contra: list[tuple[torch.Tensor, torch.Tensor]], rotated: int | None = None) -> torch.Tensor:
    """The rotary map G (a complex number z per frequency pair) with A ≈ G·B on co slices and
    A ≈ G^-T·B on contra slices ([count, n, rest] pairs of A and B); see rotary_fit_moments."""
    def moments(pairs) -> list[RotaryMoments]:
        return [(_batched(x) @ _batched(y).mT, (_batched(x) ** 2).sum(-1), (_batched(y) ** 2).sum(-1))
                for x, y in pairs]
    return rotary_fit_moments(moments(co), moments(contra), rotated)


def rotary_fit_moments(co: list[RotaryMoments], contra: list[RotaryMoments],
                       rotated: int | None = None) -> torch.Tensor:
    """rotary_fit from the slices' second moments alone (what activation matching accumulates). Pair
    (i, i + n/2) is the complex number x_i + i·x_{i+n/2}; G^-T multiplies a pair by z/|z|², so the phase
    of z comes from both sides' complex correlations and its modulus from the ratio of norms (geometric
    mean of both sides, as for rescalings; least squares when one side is absent). Exact when B is A
    under a rotary map. With `rotated` below the size (partial rotary) the rest gets the orthogonal map
    that best fits both sides (Procrustes; G^-T = G there)."""
    n = (co or contra)[0][0].shape[-1]
    if rotated is not None and rotated < n:
        def lead(sides):
            return [(c[..., :rotated, :rotated], sa[..., :rotated], sb[..., :rotated]) for c, sa, sb in sides]
        rest = sum(c[..., rotated:, rotated:] for c, _, _ in co + contra)
        return rotary_matrix(*rotary_parts(rotary_fit_moments(lead(co), lead(contra))), procrustes(rest))
    half = n // 2

    def side(sides):
        if not sides:
            return None
        corr, na, nb = 0, 0, 0
        for c, sa, sb in sides:  # Σ (a_i + i·a_h)(b_i − i·b_h) = Σ a_i b_i + a_h b_h + i·(a_h b_i − a_i b_h)
            diag = c.diagonal(dim1=-2, dim2=-1)
            real = diag[..., :half] + diag[..., half:]
            imag = c[..., half:, :half].diagonal(dim1=-2, dim2=-1) - c[..., :half, half:].diagonal(dim1=-2, dim2=-1)
            corr = corr + torch.complex(real, imag)
            na = na + sa[..., :half] + sa[..., half:]
            nb = nb + sb[..., :half] + sb[..., half:]
        return corr, na, nb

    s_co, s_contra = side(co), side(contra)
    corr = sum(s[0] for s in (s_co, s_contra) if s is not None)
    phase = corr / corr.abs().clamp_min(1e-300)
    phase = torch.where(corr.abs() > 0, phase, torch.ones_like(phase))
    if s_co is not None and s_contra is not None:
        radius = torch.sqrt(torch.sqrt(s_co[1] * s_contra[2] / (s_co[2] * s_contra[1]).clamp_min(1e-300)))
    elif s_co is not None:  # least squares for the modulus: |z| = Re⟨b, a⟩·e^{-iφ} / ‖b‖²
        radius = (s_co[0] * phase.conj()).real / s_co[2].clamp_min(1e-300)
    else:
        radius = s_contra[2].clamp_min(1e-300) / (s_contra[0] * phase.conj()).real.clamp_min(1e-300)
    z = radius * phase
    return rotary_matrix(z.real.contiguous(), z.imag.contiguous())


def _scaled_permutation(a: Tensors, b: Tensors, spec: SymmetrySpec, space: str) -> ScaledPermutation:
    """Match units by direction (cosines of incoming and outgoing weights), then scale each by the
    ratio of norms (geometric mean of both sides, since in-weights scale by s and out-weights by 1/s)."""
    def norms_and_dirs(variance):
        pairs = list(slices(a, b, spec, space, (variance,)))
        ua = torch.cat([p[0] for p in pairs], dim=-1)
        ub = torch.cat([p[1] for p in pairs], dim=-1)
        na, nb = ua.norm(dim=-1).clamp_min(1e-12), ub.norm(dim=-1).clamp_min(1e-12)
        return na, nb, (ua / na[:, None]) @ (ub / nb[:, None]).T

    in_a, in_b, cos_in = norms_and_dirs(CO)
    out_a, out_b, cos_out = norms_and_dirs(CONTRA)
    perm = assignment(cos_in + cos_out)
    scale = torch.sqrt((in_a / in_b[perm]) * (out_b[perm] / out_a))
    return ScaledPermutation(perm, scale)


def _least_squares(a: Tensors, b: Tensors, spec: SymmetrySpec, space: str) -> torch.Tensor:
    """Invertible G minimising Σ_co ‖A − G B‖² (the contravariant side is left out: it is not linear
    in G). Exact when B is A under an invertible map and B's co-slices have full row rank."""
    sp = spec.spaces[space]
    ab = torch.zeros(sp.count, sp.size, sp.size, dtype=torch.float64, device=_device(a))
    gram = torch.zeros_like(ab)
    for ua, ub in slices(a, b, spec, space, (CO,)):
        cross(ua, ub, into=ab)
        cross(ub, ub, into=gram)
    eye = torch.eye(sp.size, dtype=torch.float64, device=gram.device)
    ridge = 1e-10 * gram.diagonal(dim1=-2, dim2=-1).mean(-1)[:, None, None] * eye
    return torch.linalg.solve(gram + ridge, ab.mT).mT


def _rescale(a: Tensors, b: Tensors, spec: SymmetrySpec, space: str) -> torch.Tensor:
    """Per-head scalar s with A_co ≈ s·B_co and A_contra ≈ B_contra/s: s² = (‖A_co‖‖B_contra‖)/(‖B_co‖‖A_contra‖)."""
    sp = spec.spaces[space]

    def norm(variance, which):
        return torch.sqrt(sum((p[which] ** 2).sum(dim=(-2, -1)) for p in slices(a, b, spec, space, (variance,))))

    s = torch.sqrt(norm(CO, 0) * norm(CONTRA, 1) / (norm(CO, 1) * norm(CONTRA, 0)).clamp_min(1e-12))
    return s[:, None, None] * torch.eye(sp.size, dtype=torch.float64, device=s.device)


def rotation_scale(a: Tensors, b: Tensors, spec: SymmetrySpec, space: str, g: torch.Tensor) -> torch.Tensor:
    """Per head, the scalar s > 0 minimising ‖A_co − s·G·B_co‖² + ‖A_contra − G·B_contra/s‖² once the
    rotation G is fixed (Zhang et al.'s rescaling after rotation; their code takes the best real root of
    the same quartic): with q = ‖B_co‖², p = ⟨A_co, G·B_co⟩, k = ‖B_contra‖², r = ⟨A_contra, G·B_contra⟩
    (G keeps norms), the stationary points are the roots of q·s⁴ − p·s³ + r·s − k = 0. 1 when none is positive."""
    sums = {}
    for variance in (CO, CONTRA):
        norm = inner = 0.0
        for ua, ub in slices(a, b, spec, space, (variance,)):
            ua, ub = _batched(ua), _batched(ub)
            norm = norm + (ub ** 2).sum((-2, -1))
            inner = inner + (ua * (g.to(ub.dtype) @ ub)).sum((-2, -1))
        sums[variance] = (norm, inner)
    (q, p), (k, r) = sums[CO], sums[CONTRA]
    count = g.shape[0]
    out = torch.ones(count, dtype=torch.float64, device=g.device)
    for h in range(count):
        qh, ph, kh, rh = (float(x[h]) if torch.is_tensor(x) else float(x) for x in (q, p, k, r))
        roots = np.roots([qh, -ph, 0.0, rh, -kh])
        positive = [float(z.real) for z in roots if abs(z.imag) < 1e-9 and z.real > 0]
        if positive:
            out[h] = min(positive, key=lambda s: qh * s * s - 2 * ph * s + kh / (s * s) - 2 * rh / s)
    return out
