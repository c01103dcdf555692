"""Permutation solves that run beside the next steps of a weight-matching sweep.

An MLP's units touch only that MLP's tensors (and the residual's step reads them), so while its
assignment is being solved the sweep can go on with the heads and the other MLPs: nothing they
read changes when the permutation lands. scipy's solver releases the GIL, so on a GPU host (many
CPU cores, the costs computed on the GPU) a sweep's dozen 3072×3072 solves run side by side
instead of one after another, and on a CPU they overlap the next cost matmuls.

The result is exactly the sequential one: each solve is a pure function of its cost, and a
pending permutation is applied (in submission order) before any step reads a tensor it moves.

At most `depth` solves wait at a time (by default one more than the threads): a GPT-2-small cost is
38 MB, and in a first sweep, where every solve was cold (scipy's dense solver, 0.4-1 s against the 0.2 s
a cost product takes; now certified from zero potentials in about 0.3 s, symalign.match.certified), the
queue grew to all twelve: 0.45 GB, the run's peak memory (docs/benchmarks.md). A full queue lands its
oldest solve before taking another; landing earlier changes nothing but when."""

from __future__ import annotations

import os
from concurrent.futures import Future

import torch

from symalign.match.certified import Hint, certified_assignment
from symalign.match.mapped import MappedModel
from symalign.symmetry.groups import Permutation
from symalign.symmetry.transform import Transform
from symalign.torch_threads import serial_pool


def solver_threads() -> int:
    """Threads for the solves: the CPU cores torch may use, at most 8 (a sweep has ~12 big solves)."""
    return max(1, min(8, torch.get_num_threads(), os.cpu_count() or 1))


class DeferredPermutations:
    """Pending permutation solves of a sweep, settled before anything reads what they move."""

    def __init__(self, mapped: MappedModel, transform: Transform, hints: dict[str, Hint],
                 threads: int | None = None, depth: int | None = None):
        self.mapped, self.transform, self.hints = mapped, transform, hints
        threads = solver_threads() if threads is None else threads
        self.depth = threads + 1 if depth is None else depth
        # one torch thread each: OpenMP teams of their own would slow the main thread's small SVDs 4×
        self.pool = serial_pool(threads, "assignment") if threads > 1 else None
        self.pending: dict[str, Future] = {}

    def submit(self, space: str, cost: torch.Tensor) -> None:
        """Solve `space`'s assignment for `cost` (B as it is now; float32 is widened in the solver's thread); applied
        at the next settle."""
        self.settle(self.mapped.touched(space))  # a space solved twice in a row: the first lands first
        while len(self.pending) >= self.depth:  # the oldest first: submission order
            oldest = next(iter(self.pending))
            self._land(oldest, self.pending.pop(oldest).result())
        hint = self.hints.get(space)
        if self.pool is None:
            self._land(space, certified_assignment(cost, None, hint))
        else:
            self.pending[space] = self.pool.submit(certified_assignment, cost, None, hint)

    def settle(self, names: set[str] | None = None) -> None:
        """Apply every pending solve whose tensors meet `names` (all of them when None)."""
        for space in list(self.pending):
            if names is None or self.mapped.touched(space) & names:
                self._land(space, self.pending.pop(space).result())

    def close(self) -> None:
        self.settle()
        if self.pool is not None:
            self.pool.shutdown()

    def _land(self, space: str, solved: tuple) -> None:
        """B moves by the solved permutation (the change against B as it was); the hint follows
        the columns (the next cost's column j is this one's column perm[j])."""
        perm, hint = solved
        delta = Permutation(torch.as_tensor(perm, dtype=torch.long))
        old = self.transform.get(space)
        self.transform[space] = delta if old is None else delta.compose(old)
        self.mapped.act({space: delta})
        if hint is None:
            self.hints.pop(space, None)
        else:
            self.hints[space] = Hint(hint.potentials[perm])
