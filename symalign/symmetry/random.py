"""Random admissible group elements: the planted symmetries behind the teaching demo and the
matcher tests (same function, very different weights)."""

from __future__ import annotations

from functools import lru_cache

import torch

from symalign.symmetry.groups import Dense, GroupElement, Permutation, ScaledPermutation, rotary_matrix
from symalign.symmetry.spec import Space, SymmetrySpec
from symalign.symmetry.transform import Transform


def random_orthogonal(n: int, generator: torch.Generator, batch: int | None = None) -> torch.Tensor:
    """Haar-distributed orthogonal matrices (QR of a Gaussian with the sign fix)."""
    a = torch.randn((batch or 1, n, n), generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(a)
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[:, None, :]
    return q if batch else q[0]


def orthogonal_fixing_ones(rotation: torch.Tensor) -> torch.Tensor:
    """Embed an orthogonal map of the (d−1)-dim complement of 1 into O(d) so that Q·1 = 1."""
    d = rotation.shape[-1] + 1
    basis = ones_complement_basis(d)
    return basis @ torch.block_diag(torch.ones(1, 1, dtype=torch.float64), rotation) @ basis.T


@lru_cache(maxsize=16)
def ones_complement_basis(d: int) -> torch.Tensor:
    """An orthonormal basis of R^d whose first column is 1/√d (the rest spans its complement).
    Cached: matchers ask for it at every residual update. Callers must not modify it."""
    a = torch.eye(d, dtype=torch.float64)
    a[:, 0] = 1.0
    q, r = torch.linalg.qr(a)
    return q * torch.sign(torch.diagonal(r))[None, :]


def random_element(space: Space, cls: str, generator: torch.Generator) -> GroupElement:
    n, batch = space.size, (space.count if space.count > 1 or space.batched_by else None)
    if cls == "perm" and batch is None:
        return Permutation(torch.randperm(n, generator=generator))
    if cls == "scaled_perm" and batch is None:
        scale = torch.exp(torch.empty(n, dtype=torch.float64).uniform_(-1.0, 1.0, generator=generator))
        return ScaledPermutation(torch.randperm(n, generator=generator), scale)
    if cls == "orthogonal" and space.fixes_ones:
        return Dense(orthogonal_fixing_ones(random_orthogonal(n - 1, generator)), "orthogonal")
    stack = batch or 1
    if cls == "perm":
        m = torch.stack([torch.eye(n, dtype=torch.float64)[torch.randperm(n,
                                                                          generator=generator)] for _ in range(stack)])
        kind = "perm"
    elif cls == "rotary":  # a 2×2 rotation and scale per frequency pair
        half = space.rotated_dims // 2
        free = random_orthogonal(n - 2 * half, generator, stack) if n > 2 * half else None
        angle = torch.empty(stack, half, dtype=torch.float64).uniform_(-torch.pi, torch.pi, generator=generator)
        radius = torch.exp(torch.empty(stack, half, dtype=torch.float64).uniform_(-0.5, 0.5, generator=generator))
        m, kind = rotary_matrix(radius * torch.cos(angle), radius * torch.sin(angle), free), "rotary"
    elif cls == "orthogonal":
        m, kind = random_orthogonal(n, generator, stack), "orthogonal"
    elif cls == "orthogonal+rescale":
        a = torch.exp(torch.empty(stack, dtype=torch.float64).uniform_(-1.0, 1.0, generator=generator))
        m, kind = a[:, None, None] * random_orthogonal(n, generator, stack), cls
    elif cls == "rescale":
        a = torch.exp(torch.empty(stack, dtype=torch.float64).uniform_(-1.0, 1.0, generator=generator))
        m, kind = a[:, None, None] * torch.eye(n, dtype=torch.float64), "rescale"
    elif cls in ("invertible", "scaled_perm"):
        # well-conditioned: U diag(e^s) V with s ∈ [−0.5, 0.5]
        s = torch.exp(torch.empty(stack, n, dtype=torch.float64).uniform_(-0.5, 0.5, generator=generator))
        m = random_orthogonal(n, generator, stack) @ (s[:, :, None] * random_orthogonal(n, generator, stack))
        kind = "invertible"
    else:
        raise ValueError(f"no random element for class {cls!r}")
    return Dense(m if batch else m[0], kind)


def random_transform(spec: SymmetrySpec, classes: dict[str, str], seed: int = 0) -> Transform:
    """A random admissible transform using `classes` (kind -> class) on every space of each kind."""
    spec.check_classes(classes)
    generator = torch.Generator().manual_seed(seed)
    out = Transform()
    for space in spec.spaces.values():
        cls = classes.get(space.kind, "none")
        if cls != "none":
            out[space.name] = random_element(space, cls, generator)
    return out
