"""Exact linear assignment for weight matching's repeated MLP solves: warm-started and certified by LP
duality (scipy's dense solver where a certificate fails), and run in a thread pool beside the next steps of a
sweep, so the solves leave the critical path."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sparse
import torch
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from symalign.match.solvers import assignment
from symalign.match.weight.running import RunningModel
from symalign.symmetry.groups import Permutation
from symalign.symmetry.transform import Transform
from symalign.torch_threads import serial_pool

SMALL = 1024  # below this scipy's dense solver takes < 40 ms, about what a certificate costs: certify nothing
CANDIDATES = 16  # per row, by reduced cost (8: ~3 rounds a warm solve at 3072; 16: ~1-2)
ROUNDS = 4
TOLERANCE = 1e-11  # relative to max|cost|: a dual constraint violated by less counts as met
SLACK = TOLERANCE * 1e-3  # relative to max|cost|: Bellman-Ford lowers a potential by more than this or not at all
BLOCK = 1 << 18  # cost entries widened to float64 at a time: no n×n float64 copy, and each block in cache
# more rows than this share violating after a round: go dense. Measured at 3072 (docs/benchmarks.md): GPT-2-small's
# first-sweep costs leave 2-4% of rows violating after the first round, its warm ones 8-11%, and two unrelated
# random GPT-2 shapes (Zhang's one pass) 99%, which 4 rounds do not certify and 6 do, in more time than scipy's
FAR = 0.25
RELAXATIONS = 200  # Bellman-Ford passes before the guess is declared not provably optimal
STATS: Counter = Counter()  # solves, certified (no dense solve), dense (fell back), rounds


@dataclass
class Hint:
    """What the previous solve of the same space leaves the next: its column potentials, indexed
    by the next cost's columns (the caller re-indexes them when it permutes B)."""

    potentials: np.ndarray


def dense_assignment(cost: torch.Tensor) -> np.ndarray:
    """perm maximising Σ_i cost[i, perm[i]] (scipy's dense solver, symalign.match.solvers.assignment, which
    widens a float32 cost itself: one float64 copy)."""
    return assignment(cost).numpy()


def certified_assignment(cost: torch.Tensor, guess: np.ndarray | None = None,
                         hint: Hint | None = None) -> tuple[np.ndarray, Hint | None]:
    """An optimal perm for `cost` (maximised) and the hint for the next solve. `guess`: a perm
    expected to be (nearly) optimal, e.g. the previous solve's; `hint`: its column potentials.
    Without a hint the potentials start at zero: the candidates are then each row's largest costs."""
    n = cost.shape[0]
    STATS["solves"] += 1
    if n < SMALL or cost.shape[0] != cost.shape[1]:
        STATS["dense"] += 1
        return dense_assignment(cost), None
    cost = cost.detach()  # float32 stays float32: the float64 work widens it a block at a time (exact)
    scale = max(float(cost.max()), -float(cost.min())) or 1.0
    # no hint (a first sweep, a one-pass run): the same rounds from zero potentials, so the candidates are
    # each row's largest costs; GPT-2-small's first-sweep MLP costs (3072²) are certified in 3 rounds, 0.30 s
    # against 1.05 s for scipy alone, and a cost the candidates miss still goes dense
    v = np.zeros(n) if hint is None else hint.potentials.copy()
    sigma = np.arange(n) if guess is None else np.asarray(guess)
    rows, cols = _candidates(cost, v, sigma)
    for _ in range(ROUNDS):
        STATS["rounds"] += 1
        weights = _weights(cost, rows, cols)
        sigma, potentials = _sparse_optimum(n, rows, cols, weights, sigma, v, scale)
        if potentials is None:
            break
        v = potentials
        bad_rows, bad_cols = _violations(cost, sigma, v, scale)
        if bad_rows.size == 0:
            STATS["certified"] += 1
            return sigma, Hint(v)
        if np.unique(bad_rows).size > FAR * n:  # the candidates are far from the optimum: rounds would cost more
            break
        rows, cols = np.concatenate([rows, bad_rows]), np.concatenate([cols, bad_cols])
    STATS["dense"] += 1
    return dense_assignment(cost), Hint(v)


def _row_blocks(cost: torch.Tensor) -> Iterator[tuple[int, torch.Tensor]]:
    """(first row, a float64 copy of those rows) over the cost, BLOCK entries at a time: callers add to it in place."""
    step = max(1, BLOCK // max(1, cost.shape[1]))
    for start in range(0, cost.shape[0], step):
        yield start, cost[start:start + step].to(torch.float64, copy=True)


def _weights(cost: torch.Tensor, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """w = −cost on the candidate edges (the sparse problem minimises)."""
    at = (torch.as_tensor(rows, device=cost.device), torch.as_tensor(cols, device=cost.device))
    return -cost[at].to(torch.float64).cpu().numpy()


def _candidates(cost: torch.Tensor, v: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's guess edge and its k smallest reduced costs w_ij − v_j (rows, cols; no repeats)."""
    n = cost.shape[0]
    k = min(CANDIDATES, n)
    vt = torch.as_tensor(v, dtype=torch.float64, device=cost.device)[None, :]
    best = torch.cat([torch.topk(block.add_(vt), k, dim=1).indices for _, block in _row_blocks(cost)])  # −(w − v)
    best = best.cpu().numpy()
    rows = np.concatenate([np.repeat(np.arange(n), k), np.arange(n)])
    cols = np.concatenate([best.ravel(), sigma])
    keys = np.unique(rows * n + cols)
    return keys // n, keys % n


def _potentials(n: int, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, sigma: np.ndarray,
                start: np.ndarray, scale: float) -> np.ndarray | None:
    """Column potentials v proving σ optimal on the sparse problem (Bellman-Ford from `start` on
    v_j ≤ v_σ(i) + w_ij − w_iσ(i)), or None when they do not settle (σ not optimal there, or slow)."""
    assigned = cols == sigma[rows]
    if np.count_nonzero(assigned) != n:
        return None
    own = np.empty(n)
    own[rows[assigned]] = weights[assigned]
    src, dst = sigma[rows[~assigned]], cols[~assigned]
    length = weights[~assigned] - own[rows[~assigned]]
    order = np.argsort(dst, kind="stable")
    src, dst, length = src[order], dst[order], length[order]
    if dst.size == 0:
        return start.copy()
    starts = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]])
    heads = dst[starts]
    v = start.copy()
    slack = SLACK * scale
    for _ in range(RELAXATIONS):
        best = np.minimum.reduceat(v[src] + length, starts)
        lower = best < v[heads] - slack
        if not lower.any():
            return v
        v[heads[lower]] = best[lower]
    return None


def _sparse_optimum(n: int, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, guess: np.ndarray,
                    start: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray | None]:
    """An optimal perm of the sparse problem and its column potentials (None: they did not settle).

    The guess is kept when it is optimal there. Whether it is, LAPJVsp tells in about 10 ms at 3072; Bellman-Ford
    on a guess that is not took its 200 passes to find out (44 ms), a third of a GPT-2-small run's solver time
    (docs/benchmarks.md). The guess is tried whenever its weight is within `n`·4·slack of the optimum: Bellman-Ford
    settling on it proves it within `n`·slack, so every guess the potentials could certify is still tried, and
    the answer is the one trying the guess first gave."""
    sigma = _sparse_assignment(n, rows, cols, weights)

    def weight(perm: np.ndarray) -> float:  # its n edges are candidates: the guess's always, LAPJVsp's by construction
        return float(weights[cols == perm[rows]].sum())

    if (guess != sigma).any() and weight(guess) <= weight(sigma) + 4 * n * SLACK * scale:
        potentials = _potentials(n, rows, cols, weights, guess, start, scale)
        if potentials is not None:
            return guess, potentials
    return sigma, _potentials(n, rows, cols, weights, sigma, start, scale)


def _sparse_assignment(n: int, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Optimal perm among the candidate edges (scipy's LAPJVsp, minimising; weights shifted > 0
    since a sparse matrix's zeros are not edges)."""
    shifted = weights - weights.min() + 1.0
    matrix = sparse.csr_matrix((shifted, (rows, cols)), shape=(n, n))
    r, c = min_weight_full_bipartite_matching(matrix)
    sigma = np.empty(n, dtype=np.int64)
    sigma[r] = c
    return sigma


def _violations(cost: torch.Tensor, sigma: np.ndarray, v: np.ndarray, scale: float,
                per_row: int = CANDIDATES) -> tuple[np.ndarray, np.ndarray]:
    """Dense edges whose dual constraint u_i + v_j ≤ w_ij (w = −cost) fails by more than the
    tolerance (the worst `per_row` of each row), as (rows, cols). A block of rows at a time."""
    n = cost.shape[0]
    vt = torch.as_tensor(v, dtype=torch.float64, device=cost.device)
    idx = torch.as_tensor(sigma, device=cost.device)
    u = -cost[torch.arange(n, device=cost.device), idx].to(torch.float64) - vt[idx]
    limit = TOLERANCE * scale
    rows, cols = [], []
    for start, block in _row_blocks(cost):
        excess = block.add_(u[start:start + len(block), None]).add_(vt[None, :])  # −slack: > 0 where violated
        bad = torch.nonzero(excess.amax(dim=1) > limit).squeeze(1)
        if len(bad):  # only rows with a violation are ranked
            worst = torch.topk(excess[bad], min(per_row, n), dim=1)
            keep = worst.values > limit
            rows.append((bad + start)[:, None].expand_as(keep)[keep])
            cols.append(worst.indices[keep])
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return torch.cat(rows).cpu().numpy(), torch.cat(cols).cpu().numpy()


def solver_threads() -> int:
    """Threads for the solves: the CPU cores torch may use, at most 8 (a sweep has ~12 big solves)."""
    return max(1, min(8, torch.get_num_threads(), os.cpu_count() or 1))


class DeferredPermutations:
    """Pending permutation solves of a sweep, settled before anything reads what they move."""

    def __init__(self, mapped: RunningModel, transform: Transform, hints: dict[str, Hint],
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
