"""Where GPT-2-small weight matching's main-thread time goes, by function (issue #73).

    python benchmarks/weight_time_split.py [--work DIR] [--threads 2] [--option KEY=VALUE ...]
        [--eager-residual] [--count-flops] [--moved-units]

Aligns the two random GPT-2-small checkpoints of benchmarks/memory.py (built there once, cached) in this
process, `--classes all` at the defaults, with a timer around each hot function: the correlation products,
applying maps to B, Procrustes, holds, the distance, waiting for the assignment solves. It prints seconds,
calls and (for the products) GFLOP per function, the solves' CPU seconds in their own thread, then the run's
sweeps, inner passes, distance and matching seconds, the machine and the products' floor at its own matmul
speed (benchmarks/machine.py), and with `--count-flops` every product's GFLOP (torch's FlopCounterMode).
`--moved-units`: per sweep, the units each MLP's landed permutation moved (how many solves change nothing).
Timers count the main thread only: the solves run in the assignment pool beside it.
Run it on an idle machine; compare two versions in paired runs minutes apart (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import defaultdict
from contextlib import nullcontext
from functools import partial
from pathlib import Path

from machine import describe, matmul_gflops  # benchmarks/machine.py: this machine's matmul speed
from memory import ORG, use_gpt2_pair  # benchmarks/memory.py: the same checkpoints

SECONDS: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)
FLOP: dict[str, float] = defaultdict(float)
MAIN = threading.main_thread()


DEPTH: dict[str, int] = defaultdict(int)  # per label: a call inside another of the same label counts once


def timed(owner, attr: str, label: str, flop=None) -> None:
    """Wrap owner.attr so its main-thread calls add to SECONDS[label] (outermost call of that label only:
    the residual's constrained Procrustes calls plain Procrustes, and both are "Procrustes")."""
    original = getattr(owner, attr)

    def wrapper(*args, **kwargs):
        if threading.current_thread() is not MAIN or DEPTH[label]:
            return original(*args, **kwargs)
        DEPTH[label] += 1
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            DEPTH[label] -= 1
            SECONDS[label] += time.perf_counter() - began
            CALLS[label] += 1
            if flop is not None:
                FLOP[label] += flop(*args, **kwargs)

    setattr(owner, attr, wrapper)


SOLVER_CPU = [0.0, 0]  # CPU seconds and calls of the assignment solves, in whichever thread ran them


def solver_cpu_counted(deferred) -> None:
    """Count the CPU time of every assignment solve (time.thread_time: its own thread's CPU, so the main
    thread's work beside it does not count)."""
    solve = deferred.certified_assignment

    def counted(*args, **kwargs):
        began = time.thread_time()
        try:
            return solve(*args, **kwargs)
        finally:
            SOLVER_CPU[0] += time.thread_time() - began
            SOLVER_CPU[1] += 1

    deferred.certified_assignment = counted


MOVED: list[tuple[str, int]] = []  # (space, units its landed permutation moved), in landing order


def moved_units_recorded(deferred) -> None:
    """Record how many units each landed MLP permutation moves (the change against B as it was)."""
    land = deferred.DeferredPermutations._land

    def recorded(self, space, solved):
        perm = solved[0]
        MOVED.append((space, sum(int(j) != i for i, j in enumerate(perm))))
        return land(self, space, solved)

    deferred.DeferredPermutations._land = recorded


def print_moved_units() -> None:
    """A table by sweep. Every sweep solves each MLP once and lands them all before its inner passes, so
    the landings come in sweep-sized groups."""
    if not MOVED:
        print("\nno permutation solves landed")
        return
    per_sweep = len({space for space, _ in MOVED})
    print("\n| sweep | units moved | MLPs that changed |\n|---|---|---|")
    for start in range(0, len(MOVED), per_sweep):
        group = [moved for _, moved in MOVED[start:start + per_sweep]]
        print(f"| {start // per_sweep + 1} | {sum(group):,} | {sum(1 for m in group if m)} of {len(group)} |")


def cross_flop(ua, ub, into=None) -> float:
    count = ua.shape[0] if ua.dim() == 3 else 1
    return 2.0 * count * ua.shape[-2] * ua.shape[-1] * ub.shape[-2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/symalign-memory")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--option", action="append", default=[], help="a matcher option, KEY=VALUE")
    parser.add_argument("--count-flops", action="store_true",
                        help="also every product's GFLOP (torch's FlopCounterMode; the run is then about 10%% slower)")
    parser.add_argument("--eager-residual", action="store_true",
                        help="every MLP tensor rotated at each residual step (lazy_residual=False, as before)")
    parser.add_argument("--moved-units", action="store_true",
                        help="also, per sweep, the units each MLP's permutation moved")
    args = parser.parse_args()
    params = use_gpt2_pair(Path(args.work))

    import torch

    torch.set_num_threads(args.threads)
    gflops = matmul_gflops(args.threads)  # before the run, on an idle machine
    from symalign.match import deferred, mapped, solvers, weight
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.models import load_model

    for module in (solvers, mapped):
        timed(module, "cross", "correlation products", cross_flop)
    timed(mapped.MappedModel, "_move", "applying maps")
    timed(mapped.MappedModel, "hold", "holds")
    timed(mapped.MappedModel, "distance", "distance")
    timed(deferred.DeferredPermutations, "settle", "waiting for solves")
    solver_cpu_counted(deferred)
    if args.moved_units:
        moved_units_recorded(deferred)
    timed(solvers, "procrustes", "Procrustes")
    timed(solvers, "procrustes_fixing_ones", "Procrustes")
    if args.eager_residual:
        weight.weight_match = partial(weight.weight_match, lazy_residual=False)
    options = {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in args.option)}
    a, b = load_model(f"{ORG}/gpt2-small-0"), load_model(f"{ORG}/gpt2-small-1")
    from torch.utils.flop_counter import FlopCounterMode

    # every product of the main thread (costs, steps applied, lag); its dispatch slows the run by about 10%
    flops = FlopCounterMode(display=False) if args.count_flops else None
    began = time.perf_counter()
    with flops or nullcontext():
        result = align(a, b, AlignConfig.from_options(options, method="weight", preset="all"))
    wall = time.perf_counter() - began
    sweeps = [s for s in result.report.sweeps if s.step is None]
    print(f"GPT-2-small ({params / 1e6:.0f}M parameters), {args.threads} threads, options {options or 'defaults'}"
          f"{', eager residual' if args.eager_residual else ''}")
    print("\n| where (main thread) | seconds | calls | GFLOP |")
    print("|---|---|---|---|")
    for label in sorted(SECONDS, key=SECONDS.get, reverse=True):
        gflop = f"{FLOP[label] / 1e9:,.0f}" if label in FLOP else ""
        print(f"| {label} | {SECONDS[label]:.1f} | {CALLS[label]} | {gflop} |")
    print(f"\nalign(): {wall:.1f} s; matching {result.report.sweeps[-1].seconds:.1f} s; "
          f"{len(sweeps) - 1} sweeps, {sum(s.inner_passes or 0 for s in result.report.sweeps)} inner passes; "
          f"distance {result.report.distance_after:.13f}"
          + (f"; {flops.get_total_flops() / 1e9:,.0f} GFLOP of products in all" if flops else ""))
    print(f"assignment solves: {SOLVER_CPU[1]} in {SOLVER_CPU[0]:.1f} CPU s of their own thread")
    products = FLOP["correlation products"] / 1e9
    print(f"{describe(args.threads, gflops=gflops)} before the run: the run's {products:,.0f} GFLOP of correlation "
          f"products take {products / gflops:.1f} s at that speed (their floor here)")
    for s in result.report.sweeps:
        print(f"  sweep {s.sweep}: distance {s.distance:.10f} at {s.seconds:.1f} s"
              + (f", {s.inner_passes} inner passes" if s.inner_passes else ""))
    if args.moved_units:
        print_moved_units()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
