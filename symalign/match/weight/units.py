"""Pairing whole units in weight matching: attention heads by costs no map inside a head changes (their
QK/OV circuits or spectra), a mixture's experts with their router rows, both through one reordering step."""

from __future__ import annotations

from collections.abc import Callable

import torch

from symalign.match.solvers import assignment
from symalign.match.weight.running import RunningModel
from symalign.symmetry.groups import Permutation
from symalign.symmetry.transform import Transform

Tensors = dict[str, torch.Tensor]


def _with_bias(t: Tensors, name: str, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A projection's weight with its bias appended as an extra column (zeros for bias-free layers)."""
    w = t[name + ".weight"].to(dtype)
    b = t.get(name + ".bias")
    b = torch.zeros(w.shape[:-1], dtype=dtype, device=w.device) if b is None else b.to(dtype)
    return torch.cat([w, b[..., None]], dim=-1)  # [H, dh, d+1] (grouped queries: [H_kv, g, dh, d+1])


def _circuit_factors(t: Tensors, layer: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """Per key/value head the factors of its circuits, QK = Qᵀ K and OV = O V (biases as an extra
    column). Query heads that share a key/value head are summed first (grouped-query attention):
    Σ_g Q_gᵀ K = (Σ_g Q_g)ᵀ K and Σ_g O_g V = (Σ_g O_g) V, so neither maps inside the head nor the
    order of its query heads change the circuits."""
    p = f"layer.{layer}.attn."
    q, k, v = (_with_bias(t, p + n, dtype) for n in "qkv")  # [H, dh, d+1] (grouped queries: [H_kv, g, dh, d+1])
    o = t[p + "o.weight"].to(dtype)  # [d, H, dh] (grouped: [d, H_kv, g, dh])
    if q.dim() == 4:
        q, o = q.sum(1), o.sum(2)
    return q, k, o, v


def head_cost(a: Tensors, b: Tensors, layer: int, kind: str = "circuit",
              dtype: torch.dtype = torch.float64, inner: str = "orthogonal") -> torch.Tensor:
    """[H, H] score (higher = more alike) of A's head i against B's head j.

    `circuit`: ⟨QK_a, QK_b⟩ + ⟨OV_a, OV_b⟩ (Frobenius), computed from the factors without forming a
    circuit: ⟨Q_aᵀK_a, Q_bᵀK_b⟩ = Σ (Q_a Q_bᵀ) ⊙ (K_a K_bᵀ) and ⟨O_aV_a, O_bV_b⟩ = Σ (O_aᵀO_b) ⊙ (V_a V_bᵀ).
    The circuits are d × d per head (a GPT-2-small layer: 4 × 57 MB in float64); these products
    are d_head × d_head per head pair (5 MB). `dtype`: their precision (weight matching's float32 at
    real scale; the [H, H] cost's entries differ by far more than float32's round-off). `inner`: for
    `brute-force`, the class of the maps inside a head pair (perm, else rotations)."""
    if kind == "brute-force":
        return brute_force_head_cost(a, b, layer, inner)
    if kind == "circuit":
        qa, ka, oa, va = _circuit_factors(a, layer, dtype)
        qb, kb, ob, vb = _circuit_factors(b, layer, dtype)
        qk = torch.einsum("hid,gjd->hgij", qa, qb) * torch.einsum("hid,gjd->hgij", ka, kb)
        ov = torch.einsum("dhi,dgj->hgij", oa, ob) * torch.einsum("hid,gjd->hgij", va, vb)
        return (qk + ov).sum((-2, -1)).double()
    if kind == "spectral":
        p = f"layer.{layer}.attn."
        total = 0
        for name in ("q", "k", "v"):
            wa, wb = _with_bias(a, p + name), _with_bias(b, p + name)
            sa = torch.linalg.svdvals(wa.reshape(wa.shape[0], -1, wa.shape[-1]))
            sb = torch.linalg.svdvals(wb.reshape(wb.shape[0], -1, wb.shape[-1]))
            total = total - torch.cdist(sa, sb)
        return total
    raise ValueError(f"unknown head cost {kind!r}; choose circuit, spectral or brute-force")


def inner_correlations(a: Tensors, b: Tensors, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[H, H, dh, dh] correlations of every head pair's QK and VO units: ⟨A's unit r, B's unit c⟩ over
    the weights a map inside the head moves together (q and k rows for QK; v rows and o columns for VO)."""
    qa, ka, oa, va = _circuit_factors(a, layer, torch.float64)
    qb, kb, ob, vb = _circuit_factors(b, layer, torch.float64)
    qk = torch.einsum("hid,gjd->hgij", qa, qb) + torch.einsum("hid,gjd->hgij", ka, kb)
    vo = torch.einsum("hid,gjd->hgij", va, vb) + torch.einsum("dhi,dgj->hgij", oa, ob)
    return qk, vo


def best_inner_similarity(m: torch.Tensor, inner: str = "orthogonal") -> torch.Tensor:
    """[H, H] the largest ⟨M, G⟩ over maps G of the class inside a head pair, for M [H, H, dh, dh]:
    a permutation's by the assignment solver, a rotation's as the nuclear norm (Procrustes' optimum)."""
    if inner != "perm":
        return torch.linalg.svdvals(m).sum(-1)
    flat = m.reshape(-1, *m.shape[-2:])
    best = [c[torch.arange(len(c)), assignment(c)].sum() for c in flat]
    return torch.stack(best).reshape(m.shape[:2])


def brute_force_head_cost(a: Tensors, b: Tensors, layer: int, inner: str = "orthogonal") -> torch.Tensor:
    """TransFusion's brute force: every head pair aligned inside (QK and VO each by its best map of the
    class `inner`), scored by the similarity that alignment reaches."""
    qk, vo = inner_correlations(a, b, layer)
    return best_inner_similarity(qk, inner) + best_inner_similarity(vo, inner)


def query_head_cost(a: Tensors, b: Tensors, layer: int) -> torch.Tensor:
    """[H_kv, g, g] score of A's query head i against B's query head j inside each key/value group
    (grouped-query attention): their own QK and OV circuits with the shared key and value head,
    which no map inside the key/value head changes (from the factors, as in head_cost)."""
    p = f"layer.{layer}.attn."
    qa, ka, va = (_with_bias(a, p + n) for n in "qkv")  # q [H_kv, g, dh, d+1]
    qb, kb, vb = (_with_bias(b, p + n) for n in "qkv")
    oa, ob = a[p + "o.weight"].double(), b[p + "o.weight"].double()  # [d, H_kv, g, dh]
    qk = torch.einsum("hgid,hGjd->hgGij", qa, qb) * torch.einsum("hid,hjd->hij", ka, kb)[:, None, None]
    ov = torch.einsum("dhgi,dhGj->hgGij", oa, ob) * torch.einsum("hid,hjd->hij", va, vb)[:, None, None]
    return (qk + ov).sum((-2, -1))


Tensors = dict[str, torch.Tensor]


def reorder_whole_units(space: str, mapped: RunningModel, transform: Transform,
                        cost: Callable[[Tensors], torch.Tensor]) -> Tensors:
    """Re-pair the units of `space` with every other space held, by `cost(current B)` ([n, n], higher
    = more alike, unchanged by the maps inside a unit). Returns B's tensors that `space` touches, as
    they now are."""
    inner = [s.name for s in mapped.spec.batched_in(space) if s.name in transform]
    current = mapped.act({n: transform.pop(n).inverse() for n in inner}, mapped.touching(space))
    delta = Permutation(assignment(cost(current)))
    old = transform.get(space)
    transform[space] = delta if old is None else delta.compose(old)
    return mapped.act({space: delta}, current)


Tensors = dict[str, torch.Tensor]


def expert_cost(a, b, layer: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """[E, E] score (higher = more alike) of A's expert e against B's expert f."""
    p = f"layer.{layer}.mlp."
    total = a[p + "router.weight"].to(dtype) @ b[p + "router.weight"].to(dtype).T
    for branch in ("gate", "up"):
        circuit_a = a[p + "proj.weight"].to(dtype) @ a[p + f"{branch}.weight"].to(dtype)  # [E, d, d]
        circuit_b = b[p + "proj.weight"].to(dtype) @ b[p + f"{branch}.weight"].to(dtype)
        total = total + circuit_a.flatten(1) @ circuit_b.flatten(1).T
    return total.double()


def update_experts(space: str, mapped: RunningModel, transform: Transform) -> None:
    """Re-pair a layer's experts with every other space held: undo the per-expert unit permutations, solve
    the assignment of experts on the invariant cost, apply it (the unit's next steps solve the units)."""
    layer = int(space.split(".")[1])
    reorder_whole_units(space, mapped, transform, lambda b: expert_cost(mapped.a, b, layer, mapped.compute))
