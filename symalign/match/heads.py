"""Costs for matching whole attention heads, invariant to the maps inside each head.

`circuit` (Theus et al.): inner products of the QK circuits W_Qᵀ W_K and OV circuits W_O W_V of
each head pair (biases appended as an extra column), which no within-head map changes.
`spectral` (TransFusion): closeness of the singular-value spectra of each head's q, k and v."""

from __future__ import annotations

import torch

Tensors = dict[str, torch.Tensor]


def _with_bias(t: Tensors, name: str) -> torch.Tensor:
    """A projection's weight with its bias appended as an extra column (zeros for bias-free layers)."""
    w = t[name + ".weight"].double()
    b = t.get(name + ".bias")
    b = torch.zeros(w.shape[:-1], dtype=torch.float64, device=w.device) if b is None else b.double()
    return torch.cat([w, b[..., None]], dim=-1)  # [H, dh, d+1] (grouped queries: [H_kv, g, dh, d+1])


def circuits(t: Tensors, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per key/value head: its QK and OV circuits, summed over the query heads that share it (grouped-
    query attention), so neither maps inside the head nor the order of its query heads change them."""
    p = f"layer.{layer}.attn."
    q, k, v = (_with_bias(t, p + n) for n in "qkv")
    o = t[p + "o.weight"].double()  # [d, H, dh] (grouped: [d, H_kv, g, dh])
    if q.dim() == 3:
        q, o = q[:, None], o[:, :, None]
    qk = torch.einsum("hgid,hie->hde", q, k)
    ov = torch.einsum("dhgi,hie->hde", o, v)
    return qk.flatten(1), ov.flatten(1)


def head_cost(a: Tensors, b: Tensors, layer: int, kind: str = "circuit") -> torch.Tensor:
    """[H, H] score (higher = more alike) of A's head i against B's head j."""
    if kind == "circuit":
        (qa, oa), (qb, ob) = circuits(a, layer), circuits(b, layer)
        return qa @ qb.T + oa @ ob.T
    if kind == "spectral":
        p = f"layer.{layer}.attn."
        total = 0
        for name in ("q", "k", "v"):
            wa, wb = _with_bias(a, p + name), _with_bias(b, p + name)
            sa = torch.linalg.svdvals(wa.reshape(wa.shape[0], -1, wa.shape[-1]))
            sb = torch.linalg.svdvals(wb.reshape(wb.shape[0], -1, wb.shape[-1]))
            total = total - torch.cdist(sa, sb)
        return total
    raise ValueError(f"unknown head cost {kind!r}; choose circuit or spectral")


def query_head_cost(a: Tensors, b: Tensors, layer: int) -> torch.Tensor:
    """[H_kv, g, g] score of A's query head i against B's query head j inside each key/value group
    (grouped-query attention): their own QK and OV circuits with the shared key and value head,
    which no map inside the key/value head changes."""
    def per_query(t: Tensors) -> torch.Tensor:
        p = f"layer.{layer}.attn."
        q, k, v = (_with_bias(t, p + n) for n in "qkv")
        o = t[p + "o.weight"].double()  # [d, H_kv, g, dh]
        qk = torch.einsum("hgid,hie->hgde", q, k)
        ov = torch.einsum("dhgi,hie->hgde", o, v)
        return torch.cat([qk.flatten(2), ov.flatten(2)], dim=-1)  # [H_kv, g, features]

    fa, fb = per_query(a), per_query(b)
    return fa @ fb.mT
