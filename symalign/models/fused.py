"""Fused query/key/value projections: one matrix whose output rows hold q, k and v in a layout the
family declares. `blocks`: [q | k | v] (GPT-2's c_attn); `per-head`: for each head its q, k, v in
turn (GPT-NeoX's query_key_value). Adapters split weights with these, activation matching splits
the projection's outputs with them, so no code assumes one order."""

from __future__ import annotations

import torch

LAYOUTS = ("blocks", "per-head")


def split_qkv(x: torch.Tensor, n_head: int, layout: str, dim: int = 0,
              n_kv_head: int | None = None) -> tuple[torch.Tensor, ...]:
    """(q, k, v) from a fused axis `dim` (heads in order). `blocks` with fewer key/value heads than
    query heads (Phi-3 with grouped queries) has parts of n_head, n_kv_head and n_kv_head heads."""
    if layout == "blocks":
        kv = n_kv_head or n_head
        d_head = x.shape[dim] // (n_head + 2 * kv)
        return x.split([n_head * d_head, kv * d_head, kv * d_head], dim=dim)
    if layout == "per-head":
        dim = dim % x.dim()
        d_head = x.shape[dim] // (3 * n_head)
        parts = x.unflatten(dim, (n_head, 3, d_head))
        return tuple(parts.select(dim + 1, j).flatten(dim, dim + 1) for j in range(3))
    raise ValueError(f"unknown fused QKV layout {layout!r}; choose from {', '.join(LAYOUTS)}")
