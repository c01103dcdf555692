"""Group elements that act on one hidden space.

Convention: an element G maps hidden coordinates h to h' = G h. A tensor axis that *produces*
the hidden vector (an output axis, tagged ``co``) is multiplied by G; an axis that *consumes* it
(an input axis, or the dual side of a bilinear form such as W_K in q·k, tagged ``contra``) is
multiplied by G^-T, so every contraction between the two is unchanged. ``diag`` axes (LayerNorm
gains) are elementwise and commute only with permutations or with constant gains.

Elements may be *batched*: a stack of B maps, one per head, acting along an axis while another
axis of the tensor (the head axis) selects which map applies.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch

from symalign.errors import InadmissibleError

CO, CONTRA, DIAG = "co", "contra", "diag"


ALONG_BLOCK = 1 << 22  # elements: a larger tensor (a real vocabulary's embedding) is mapped a block of rows at a time


def _along_in_blocks(t: torch.Tensor, axis: int, m: torch.Tensor) -> torch.Tensor:
    """`_along` for a large tensor: the wide (float64) copy exists one block of rows at a time, not
    for the whole tensor (a GPT-2 token embedding would be 0.3 GB, twice)."""
    moved = t.movedim(axis, -1)
    out = torch.empty(moved.shape, dtype=t.dtype, device=t.device)
    flat_in, flat_out = moved.reshape(-1, moved.shape[-1]), out.view(-1, moved.shape[-1])
    rows = max(1, ALONG_BLOCK // moved.shape[-1])
    for i in range(0, flat_in.shape[0], rows):
        flat_out[i:i + rows] = (flat_in[i:i + rows].to(m.dtype) @ m.T).to(t.dtype)
    return out.movedim(-1, axis)


def _along(t: torch.Tensor, axis: int, matrix: torch.Tensor, batch_axis: int | None) -> torch.Tensor:
    """Return t with `matrix` ([n, n] or [B, n, n]) applied along `axis`: t'[..i..] = Σ_j M[i,j] t[..j..].

    Works in the wider of the two dtypes: float64 matrices (every exported transform) give exact
    results; a float32 matrix (the learned matcher's training steps) keeps the arithmetic cheap."""
    dtype = t.dtype
    wide = torch.promote_types(t.dtype, matrix.dtype)
    m = matrix.to(wide)
    if batch_axis is None and t.numel() > ALONG_BLOCK and wide != dtype:
        return _along_in_blocks(t, axis, m)
    work = t.to(wide)
    if batch_axis is None:
        moved = work.movedim(axis, -1)
        return (moved @ m.T).movedim(-1, axis).to(dtype)
    moved = work.movedim((batch_axis, axis), (0, -1))
    shape = moved.shape
    flat = moved.reshape(shape[0], -1, shape[-1])
    out = torch.bmm(flat, m.mT).reshape(shape)
    return out.movedim((0, -1), (batch_axis, axis)).to(dtype)


def gather(t: torch.Tensor, axis: int, index: torch.Tensor) -> torch.Tensor:
    """t.index_select(axis, index) in t's own memory order. A tensor a matcher has rotated is often a
    transposed view (an MLP's output weight after a residual step is column-major), and index_select
    along a strided axis is seven times slower than along the outermost one (8.7 against 1.2 ms for a
    GPT-2 MLP weight); gathering in memory order also keeps the layout, so the next step reads it alike."""
    if t.dim() < 2 or t.is_contiguous():
        return t.index_select(axis, index)
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))  # outermost in memory first
    view = t.permute(order)
    if not view.is_contiguous():  # overlapping or gappy strides: no memory order to keep
        return t.index_select(axis, index)
    back = sorted(range(t.dim()), key=order.__getitem__)
    return view.index_select(order.index(axis), index).permute(back)


class GroupElement:
    """One element of a symmetry group acting on a hidden space of `size` dimensions."""

    kind: str  # "perm" | "scaled_perm" | "orthogonal" | "invertible" | "rescale"

    @property
    def size(self) -> int:
        raise NotImplementedError

    @property
    def batch(self) -> int | None:
        """Number of stacked maps, or None for a single map."""
        return None

    def dense(self) -> torch.Tensor:
        """The matrix G ([n, n] or [B, n, n]) in float64."""
        raise NotImplementedError

    def act(self, t: torch.Tensor, axis: int, variance: str, batch_axis: int | None = None) -> torch.Tensor:
        raise NotImplementedError

    def inverse(self) -> GroupElement:
        raise NotImplementedError

    def compose(self, first: GroupElement) -> GroupElement:
        """self ∘ first: apply `first`, then self."""
        return Dense(self.dense() @ first.dense(), _join_kind(self.kind, first.kind))

    def select(self, index: torch.Tensor) -> GroupElement:
        """Reorder a batched element's stack (used when heads are permuted)."""
        raise NotImplementedError

    def tensors(self) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def to(self, device: torch.device | str) -> GroupElement:
        """The same element with its tensors on `device` (a matcher that ran on a GPU hands back CPU elements)."""
        moved = {f.name: getattr(self, f.name).to(device) for f in fields(self)
                 if isinstance(getattr(self, f.name), torch.Tensor)}
        return replace(self, **moved)


def _join_kind(a: str, b: str) -> str:
    """The class of a product of two dense elements (orthogonal maps form a group, as do rescalings)."""
    if a == b == "perm":
        return "perm"
    if {a, b} <= {"perm", "orthogonal"}:
        return "orthogonal"
    if a == b == "rescale":
        return "rescale"
    if {a, b} <= {"perm", "orthogonal", "rescale", "orthogonal+rescale"}:  # a rotation times a scalar per head
        return "orthogonal+rescale"
    if {a, b} <= {"rotary", "rescale"}:
        return "rotary"
    return "invertible"


def rotary_matrix(re: torch.Tensor, im: torch.Tensor, free: torch.Tensor | None = None) -> torch.Tensor:
    """The map that multiplies each frequency pair (x_i, x_{i+r/2}) by the complex number re + i·im:
    [[re, −im], [im, re]] on every pair (Hugging Face's rotate_half pairing over the r = 2·len(re)
    rotated dimensions). Such maps, and only such maps among linear ones, commute with every rotary
    position embedding. `free` ([..., f, f]): the block on the f dimensions RoPE leaves alone
    (partial rotary), placed after the rotated ones. re, im: [..., r/2]."""
    half = re.shape[-1]
    eye = torch.eye(half, dtype=re.dtype, device=re.device)
    top = torch.cat([re[..., :, None] * eye, -im[..., :, None] * eye], dim=-1)
    bottom = torch.cat([im[..., :, None] * eye, re[..., :, None] * eye], dim=-1)
    rot = torch.cat([top, bottom], dim=-2)
    if free is None or free.shape[-1] == 0:
        return rot
    r, f = rot.shape[-1], free.shape[-1]
    zeros = rot.new_zeros(*rot.shape[:-2], r, f)
    return torch.cat([torch.cat([rot, zeros], dim=-1), torch.cat([zeros.mT, free], dim=-1)], dim=-2)


def rotary_parts(m: torch.Tensor, rotated: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(re, im) of a rotary matrix's rotated block (its first `rotated` dimensions; all by default):
    the inverse of `rotary_matrix`."""
    half = (m.shape[-1] if rotated is None else rotated) // 2
    return torch.diagonal(m[..., :half, :half], dim1=-2, dim2=-1), torch.diagonal(m[..., half:2 * half, :half], dim1=-2,
                                                                                  dim2=-1)


@dataclass(frozen=True)
class Permutation(GroupElement):
    """h'_i = h_{perm[i]}. Its inverse-transpose is itself, so co and contra axes are gathered alike."""

    perm: torch.Tensor
    kind: str = "perm"

    @property
    def size(self) -> int:
        return int(self.perm.numel())

    def dense(self) -> torch.Tensor:
        return torch.eye(self.size, dtype=torch.float64)[self.perm]

    def act(self, t, axis, variance, batch_axis=None):
        return gather(t, axis, self.perm.to(t.device))

    def inverse(self):
        return Permutation(torch.argsort(self.perm))

    def compose(self, first):
        if isinstance(first, Permutation):
            return Permutation(first.perm[self.perm])
        if isinstance(first, ScaledPermutation):
            return ScaledPermutation(first.perm[self.perm], first.scale[self.perm])
        return super().compose(first)

    def tensors(self):
        return {"perm": self.perm}


@dataclass(frozen=True)
class ScaledPermutation(GroupElement):
    """h'_i = scale_i · h_{perm[i]} with positive scales: the symmetry of positively homogeneous units."""

    perm: torch.Tensor
    scale: torch.Tensor
    kind: str = "scaled_perm"

    @property
    def size(self) -> int:
        return int(self.perm.numel())

    def dense(self) -> torch.Tensor:
        return self.scale.to(torch.float64)[:, None] * torch.eye(self.size, dtype=torch.float64)[self.perm]

    def act(self, t, axis, variance, batch_axis=None):
        if variance == DIAG:
            raise InadmissibleError("a scaled permutation cannot act on an elementwise gain")
        gathered = gather(t, axis, self.perm.to(t.device))
        shape = [1] * t.dim()
        shape[axis] = self.size
        s = self.scale.to(device=t.device, dtype=torch.float64).reshape(shape)
        factor = s if variance == CO else 1.0 / s
        return (gathered.to(torch.float64) * factor).to(t.dtype)

    def inverse(self):
        inv = torch.argsort(self.perm)
        return ScaledPermutation(inv, 1.0 / self.scale[inv])

    def compose(self, first):
        if isinstance(first, (Permutation, ScaledPermutation)):
            first_scale = first.scale if isinstance(first, ScaledPermutation) else torch.ones_like(self.scale)
            return ScaledPermutation(first.perm[self.perm], self.scale * first_scale[self.perm])
        return super().compose(first)

    def tensors(self):
        return {"perm": self.perm, "scale": self.scale}


@dataclass(frozen=True)
class Dense(GroupElement):
    """A general matrix map (orthogonal, invertible, a scalar rescaling, a rotary map, or permutation
    matrices), optionally one per head."""

    matrix: torch.Tensor
    kind: str = "invertible"

    @property
    def size(self) -> int:
        return int(self.matrix.shape[-1])

    @property
    def batch(self) -> int | None:
        return int(self.matrix.shape[0]) if self.matrix.dim() == 3 else None

    def dense(self) -> torch.Tensor:
        return self.matrix.to(torch.float64)

    def inverse_transpose(self) -> torch.Tensor:
        """G^-T in the matrix's own precision (float64 for every exported transform; float32 in a
        learned step, where a float64 inverse would widen every weight it touches)."""
        m = self.matrix if self.matrix.dtype in (torch.float32, torch.float64) else self.dense()
        if self.kind in ("orthogonal", "perm"):
            return m
        return torch.linalg.inv(m).mT

    def act(self, t, axis, variance, batch_axis=None):
        if variance == DIAG:
            return _constant_gain(t, axis, self.kind)
        if (batch_axis is None) != (self.batch is None):
            raise ValueError("batched elements need a batch axis and single ones must not have one")
        if variance == CO or self.kind in ("orthogonal", "perm"):
            m = self.matrix  # G^-T = G for orthogonal maps; keep the matrix's own precision
        else:
            m = self.inverse_transpose()
        return _along(t, axis, m.to(t.device), batch_axis)

    def inverse(self):
        m = self.dense()
        inv = m.mT if self.kind in ("orthogonal", "perm") else torch.linalg.inv(m)
        return Dense(inv, self.kind)

    def select(self, index):
        # a fixed start stays where it was made (the CPU) while a head order comes from a latent on the GPU
        return Dense(self.matrix[index.to(self.matrix.device)], self.kind)

    def tensors(self):
        return {"matrix": self.matrix}


def _constant_gain(t: torch.Tensor, axis: int, kind: str) -> torch.Tensor:
    """A LayerNorm gain γ passes through a non-permutation map only if γ is constant (γ·I commutes)."""
    ref = t.narrow(axis, 0, 1)
    if not torch.allclose(t, ref.expand_as(t), rtol=1e-6, atol=1e-6):
        raise InadmissibleError(
            f"an {kind} map cannot pass a LayerNorm with a non-constant gain; "
            "canonicalise the model first (absorb LayerNorm γ and β into the following layers)"
        )
    return t


def element_from_tensors(kind: str, tensors: dict[str, torch.Tensor]) -> GroupElement:
    """Rebuild an element from what `GroupElement.tensors` saved."""
    if kind == "perm" and "matrix" in tensors:  # one permutation per head, as matrices
        return Dense(tensors["matrix"].double(), "perm")
    if kind == "perm":
        return Permutation(tensors["perm"].long())
    if kind == "scaled_perm":
        return ScaledPermutation(tensors["perm"].long(), tensors["scale"].double())
    if kind in ("orthogonal", "invertible", "rescale", "rotary", "orthogonal+rescale"):
        return Dense(tensors["matrix"].double(), kind)
    raise ValueError(f"unknown group element kind {kind!r}")
