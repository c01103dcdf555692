"""Weight matching's MLP assignments at real MLP widths (issue #108): 8,192 (Llama-3.2-1B/3B) to 14,336
(Llama-3-8B) units. Per width and kind of cost, scipy's dense solver against symalign's certified solver
(symalign.match.weight.assignment: sparse candidates proven optimal by LP duality, scipy where a proof fails),
cold (a first sweep) and warm (the next sweep: the previous solve's potentials and perm on a cost moved a
little), side by side in one process, each checked to reach scipy's optimum exactly.

    python -m benchmarks.assignment_scale [--widths 8192 14336] [--hidden 2048] [--kinds fine-tunes unrelated]

Kinds: `fine-tunes`, B's MLP rows a permutation of A's plus noise of 0.3 of their size (two fine-tunes of one
base: the cost has a clear optimum); `unrelated`, two independent random layers (the random-weights pair of
the issue: the hardest case, where every row's best candidates disagree). The cost is W_A W_Bᵀ over the
hidden size, as weight matching forms it (float32). Prints seconds and ratios to scipy; no timed test."""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from benchmarks.machine import describe
from symalign.match.weight.assignment import STATS, certified_assignment, dense_assignment


def cost_of(kind: str, n: int, hidden: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, hidden, generator=g)
    if kind == "fine-tunes":
        b = a[torch.randperm(n, generator=g)] + 0.3 * torch.randn(n, hidden, generator=g)
    else:
        b = torch.randn(n, hidden, generator=g)
    return a @ b.T


def total(cost: torch.Tensor, perm: np.ndarray) -> float:
    return float(cost.double()[torch.arange(cost.shape[0]), torch.as_tensor(perm)].sum())


def timed(fn, *args):
    began = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", nargs="+", type=int, default=[8192, 14336])
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--kinds", nargs="+", default=["fine-tunes", "unrelated"], choices=["fine-tunes", "unrelated"])
    args = parser.parse_args()
    print(describe(torch.get_num_threads()))
    print("| width | cost | scipy s | certified cold s (÷ scipy) | certified warm s (÷ scipy) | same optimum |")
    print("|---|---|---|---|---|---|")
    for n in args.widths:
        for kind in args.kinds:
            cost = cost_of(kind, n, args.hidden)
            reference, scipy_s = timed(dense_assignment, cost)
            STATS.clear()
            (cold, hint), cold_s = timed(certified_assignment, cost)
            dense_cold = STATS["dense"]
            moved = cost + 0.01 * cost.std() * torch.randn(cost.shape, generator=torch.Generator().manual_seed(1))
            STATS.clear()
            (warm, _), warm_s = timed(certified_assignment, moved, cold, hint)
            dense_warm = STATS["dense"]
            same = (abs(total(cost, cold) - total(cost, reference)) <= 1e-9 * abs(total(cost, reference))
                    and abs(total(moved, warm) - total(moved, dense_assignment(moved)))
                    <= 1e-9 * abs(total(moved, warm)))
            print(f"| {n} | {kind} | {scipy_s:.1f} | {cold_s:.1f} ({cold_s / scipy_s:.2f}"
                  f"{', scipy fallback' if dense_cold else ''}) | {warm_s:.1f} ({warm_s / scipy_s:.2f}"
                  f"{', scipy fallback' if dense_warm else ''}) | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
