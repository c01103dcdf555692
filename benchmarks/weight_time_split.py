"""Where GPT-2-small weight matching's main-thread time goes, by function.

    python -m benchmarks.weight_time_split [--work DIR] [--threads 2] [--option KEY=VALUE ...] [--count-flops]

Aligns the two random GPT-2-small checkpoints of benchmarks/memory.py (built there once, cached) in this
process, `--classes all` at the defaults, under cProfile on the main thread (the assignment solves run in their
pool beside it and are not counted, except as the main thread's wait for them). It prints the cumulative seconds
and calls of the hot functions: the correlation products, applying maps to B, Procrustes, holds, the distance,
waiting for the assignment solves; then the run's sweeps, inner passes, distance and matching seconds and the
machine; with `--count-flops` every product's GFLOP (torch's FlopCounterMode) and their floor at the machine's
own matmul speed (benchmarks/machine.py). The profiler adds a few percent to a run of large products.
Run it on an idle machine; compare two versions in paired runs minutes apart (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from benchmarks.machine import describe, matmul_gflops
from benchmarks.memory import ORG, use_gpt2_pair

# (module file's tail, function name) -> the row it is reported under
HOT = {
    ("match/solvers.py", "cross"): "correlation products",
    ("match/mapped.py", "_move"): "applying maps",
    ("match/mapped.py", "hold"): "holds",
    ("match/mapped.py", "distance"): "distance",
    ("match/deferred.py", "settle"): "waiting for solves",
    ("match/solvers.py", "procrustes"): "Procrustes (all calls)",
    ("match/solvers.py", "procrustes_fixing_ones"): "Procrustes fixing 1 (the residual's)",
}


def hot_rows(profile: cProfile.Profile) -> list[tuple[str, float, int]]:
    """(row, cumulative seconds, calls) of the HOT functions, slowest first."""
    rows = []
    for (path, _, name), (_, calls, _, cumulative, _) in pstats.Stats(profile).stats.items():
        label = next((row for (tail, fn), row in HOT.items() if fn == name and path.endswith(tail)), None)
        if label is not None:
            rows.append((label, cumulative, calls))
    return sorted(rows, key=lambda r: -r[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/symalign-memory")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--option", action="append", default=[], help="a matcher option, KEY=VALUE")
    parser.add_argument("--count-flops", action="store_true",
                        help="also every product's GFLOP (torch's FlopCounterMode; the run is then about 10%% slower)")
    args = parser.parse_args()
    params = use_gpt2_pair(Path(args.work))

    import torch

    torch.set_num_threads(args.threads)
    gflops = matmul_gflops(args.threads)  # before the run, on an idle machine
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.models import load_model

    options = {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in args.option)}
    a, b = load_model(f"{ORG}/gpt2-small-0"), load_model(f"{ORG}/gpt2-small-1")
    from torch.utils.flop_counter import FlopCounterMode

    # every product of the main thread (costs, steps applied, lag); its dispatch slows the run by about 10%
    flops = FlopCounterMode(display=False) if args.count_flops else None
    profile = cProfile.Profile()
    began = time.perf_counter()
    with flops or nullcontext():
        profile.enable()
        try:
            result = align(a, b, AlignConfig.from_options(options, method="weight", preset="all"))
        finally:
            profile.disable()
    wall = time.perf_counter() - began
    sweeps = [s for s in result.report.sweeps if s.step is None]
    print(f"GPT-2-small ({params / 1e6:.0f}M parameters), {args.threads} threads, options {options or 'defaults'}")
    print("\n| where (main thread, cumulative) | seconds | calls |")
    print("|---|---|---|")
    for label, seconds, calls in hot_rows(profile):
        print(f"| {label} | {seconds:.1f} | {calls} |")
    print(f"\nalign(): {wall:.1f} s; matching {result.report.sweeps[-1].seconds:.1f} s; "
          f"{len(sweeps) - 1} sweeps, {sum(s.inner_passes or 0 for s in result.report.sweeps)} inner passes; "
          f"distance {result.report.distance_after:.13f}")
    print(describe(args.threads, gflops=gflops) + " before the run")
    if flops:
        products = flops.get_total_flops() / 1e9
        print(f"{products:,.0f} GFLOP of products in all on the main thread: {products / gflops:.1f} s at that speed")
    for s in result.report.sweeps:
        print(f"  sweep {s.sweep}: distance {s.distance:.10f} at {s.seconds:.1f} s"
              + (f", {s.inner_passes} inner passes" if s.inner_passes else ""))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
