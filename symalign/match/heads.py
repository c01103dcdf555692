"""Costs for matching whole attention heads, invariant to the maps inside each head.

`circuit` (Theus et al.): inner products of the QK circuits W_Qᵀ W_K and OV circuits W_O W_V of
each head pair (biases appended as an extra column), which no within-head map changes.
`spectral` (TransFusion): closeness of the singular-value spectra of each head's q, k and v."""

from __future__ import annotations

import torch

Tensors = dict[str, torch.Tensor]


def _with_bias(w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cat([w.double(), b.double()[..., None]], dim=-1)  # [H, dh, d+1]


def circuits(t: Tensors, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    p = f"layer.{layer}.attn."
    q = _with_bias(t[p + "q.weight"], t[p + "q.bias"])
    k = _with_bias(t[p + "k.weight"], t[p + "k.bias"])
    v = _with_bias(t[p + "v.weight"], t[p + "v.bias"])
    o = t[p + "o.weight"].double()  # [d, H, dh]
    qk = torch.einsum("hid,hie->hde", q, k)
    ov = torch.einsum("dhi,hie->hde", o, v)
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
            sa = torch.linalg.svdvals(_with_bias(a[p + f"{name}.weight"], a[p + f"{name}.bias"]))
            sb = torch.linalg.svdvals(_with_bias(b[p + f"{name}.weight"], b[p + f"{name}.bias"]))
            total = total - torch.cdist(sa, sb)
        return total
    raise ValueError(f"unknown head cost {kind!r}; choose circuit or spectral")
