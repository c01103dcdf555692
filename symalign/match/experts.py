"""Pairing the experts of a mixture-of-experts layer (Mixtral) in weight matching.

An expert moves as a whole with its router row, and inside it the MLP units permute on their own, so
the cost that pairs experts must not change under those inner permutations (as the head cost must not
change under maps inside heads): the router rows' inner product plus, for the gate and the up branch,
the expert's circuit down·gate and down·up ([d, d], unchanged by any permutation of the m units between
them), compared across experts by the Frobenius inner product. The inner permutations are dropped before
the experts are paired and solved again after (they were found for the old pairing)."""

from __future__ import annotations

import torch

from symalign.match.mapped import MappedModel
from symalign.match.reorder import reorder_whole_units
from symalign.symmetry.transform import Transform

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


def update_experts(space: str, mapped: MappedModel, transform: Transform) -> None:
    """Re-pair a layer's experts with every other space held: undo the per-expert unit permutations, solve
    the assignment of experts on the invariant cost, apply it (the unit's next steps solve the units)."""
    layer = int(space.split(".")[1])
    reorder_whole_units(space, mapped, transform, lambda b: expert_cost(mapped.a, b, layer, mapped.compute))
