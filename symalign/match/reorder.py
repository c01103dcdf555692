"""Reordering whole units (a layer's heads, a mixture's experts) in weight matching.

A whole unit carries maps inside it (a head's rotations, an expert's unit permutations) that were solved
for the old pairing. So the pairing is scored by a cost those inner maps do not change: the inner maps
are dropped, the assignment is solved on that cost, composed with the old order and applied; the unit's
next steps solve the inner maps again."""

from __future__ import annotations

from collections.abc import Callable

import torch

from symalign.match.mapped import MappedModel
from symalign.match.solvers import assignment
from symalign.symmetry.groups import Permutation
from symalign.symmetry.transform import Transform

Tensors = dict[str, torch.Tensor]


def reorder_whole_units(space: str, mapped: MappedModel, transform: Transform,
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
