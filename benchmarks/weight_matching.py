"""Weight matching at real model sizes: GPT-2-small shapes (12 layers, width 768, 12 heads,
MLP 3072, vocabulary 50257) and ViT-B/16 shapes, random weights, B a planted transform of A.

Prints total time and its split into assignment solves (scipy), SVDs (Procrustes), cost
matmuls (correlations, least-squares products and head circuits) and applying transforms, per
device. The *floor* is the time of the solves, SVDs and cost matmuls alone (each call timed by
itself, the device synchronised on both sides); `ratio` = total / floor, the goal being ≤ 1.5.

    python benchmarks/weight_matching.py [--models gpt2 vit roberta] [--devices cpu cuda] [--sweeps 3] [--layers 12]
        [--pair planted|independent] [--solvers certified dense] [--classes full|zhang]

`--pair independent`: B is another random model (seed 1), not a transform of A: the assignments are
as hard as between two unrelated trainings. `--sweeps 0`: run to the default stopping rule (30
sweeps at most). `--solvers`: `certified` (the warm-started, proven assignment weight matching
uses, its solves running beside the next steps in threads: symalign.match.deferred) and/or `dense`
(scipy for every solve, one after another, as before issue #46); per row the solves, how many went
to the dense solver, and each sweep's seconds. With threads, `assign s` adds up the solves' own
times, which overlap each other and the cost matmuls (so the ratio can fall below 1).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from contextlib import contextmanager

import torch

import symalign.match.certified as certified
import symalign.match.deferred as deferred
import symalign.match.heads as heads
import symalign.match.mapped as mapped
import symalign.match.reorder as reorder
import symalign.match.solvers as solvers
import symalign.match.weight as weight
from symalign.models import canonicalize, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.sweeps.zhang import MATCHING
from symalign.symmetry.random import random_transform

FULL = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}
ZHANG = MATCHING  # Zhang et al.'s classes, as the zhang-table2 preset runs them
TIMES: dict[str, float] = defaultdict(float)
CERTIFIED_FROM, SOLVER_THREADS = certified.SMALL, deferred.solver_threads  # the defaults, before any patching


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(label, fn):
    def wrapper(*args, **kwargs):
        sync()
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            sync()
            TIMES[label] += time.perf_counter() - start
    return wrapper


@contextmanager
def instrumented():
    # every module that calls the solvers by its own imported name (the head orders' assignments, the MLPs' in
    # the deferred pool: the certified solve with any dense fallback inside it)
    patches = [(solvers, "assignment", "assignment (scipy)"), (reorder, "assignment", "assignment (scipy)"),
               (heads, "assignment", "assignment (scipy)"), (deferred, "certified_assignment", "assignment (scipy)"),
               (torch.linalg, "svd", "SVD"), (solvers, "cross", "cost matmuls"),
               (mapped, "cross", "cost matmuls"), (weight, "head_cost", "cost matmuls"),
               (mapped, "apply_unchecked", "apply transforms")]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    for mod, name, label in patches:
        setattr(mod, name, timed(label, getattr(mod, name)))
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def big_config(family: str, layers: int):
    if family == "gpt2":
        return tiny_config("gpt2", layers=layers, width=768, heads=12, mlp=3072, vocab=50257, context=1024, tied=False)
    if family == "roberta":  # RoBERTa-base's shapes (Zhang et al.'s Table 3 model): post-LN, vocabulary 50,265
        return tiny_config("roberta", layers=layers, width=768, heads=12, mlp=3072, vocab=50265, context=512)
    return tiny_config("vit", layers=layers, width=768, heads=12, mlp=3072, image_size=224, patch=16, channels=3,
                       labels=1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="*", default=["gpt2", "vit"])
    parser.add_argument("--devices", nargs="*", default=["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--pair", choices=["planted", "independent"], default="planted")
    parser.add_argument("--solvers", nargs="*", choices=["certified", "dense"], default=["certified"])
    parser.add_argument("--classes", choices=["full", "zhang"], default="full",
                        help="full: every class, residual rotation included; zhang: Zhang et al.'s matching (FFN "
                             "permutations, rotations and rescaling inside heads, heads in order, no residual map): "
                             "one sweep is its fixed point (no space's cost reads another's), so --sweeps 1 is their "
                             "one pass")
    args = parser.parse_args()
    classes = FULL if args.classes == "full" else ZHANG
    sweeps = args.sweeps or 30
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"{args.sweeps or 'to convergence (≤ 30)'} sweeps, {args.classes} classes, {args.pair} pair, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'model':<8}{'device':<8}{'solver':<10}{'total s':>9}{'assign s':>10}{'SVD s':>8}{'cost s':>8}"
          f"{'apply s':>9}"
          f"{'floor s':>9}{'ratio':>7}{'rel err':>10}{'sweeps':>7}{'solves':>7}{'dense':>6}  seconds per sweep")
    for family in args.models:
        a = canonicalize(random_model(big_config(family, args.layers), seed=0))
        b = (transformed(a, random_transform(spec_of(a), spec_of(a).fit(classes), seed=1)) if args.pair == "planted"
             else canonicalize(random_model(big_config(family, args.layers), seed=1)))
        spec = spec_of(a)
        boundary = weight.boundary_tensors(a)
        for device, solver in ((d, s) for d in args.devices for s in args.solvers):
            ta = {k: v.to(device) for k, v in a.tensors.items()}
            tb = {k: v.to(device) for k, v in b.tensors.items()}
            TIMES.clear()
            certified.STATS.clear()
            certified.SMALL = CERTIFIED_FROM if solver == "certified" else 10**9
            deferred.solver_threads = SOLVER_THREADS if solver == "certified" else (lambda: 1)
            sync()
            start = time.perf_counter()
            with instrumented():
                transform, history = weight.weight_match(ta, tb, spec, spec.fit(classes), boundary, max_sweeps=sweeps)
            sync()
            total = time.perf_counter() - start
            err = history[-1].distance
            floor = TIMES["assignment (scipy)"] + TIMES["SVD"] + TIMES["cost matmuls"]
            per_sweep = [round(h.seconds - before.seconds, 1) for before, h in zip(history, history[1:]) if h.sweep > 0]
            print(f"{family:<8}{device:<8}{solver:<10}{total:>9.1f}{TIMES['assignment (scipy)']:>10.1f}"
                  f"{TIMES['SVD']:>8.1f}"
                  f"{TIMES['cost matmuls']:>8.1f}{TIMES['apply transforms']:>9.1f}{floor:>9.1f}{total / floor:>7.2f}"
                  f"{err:>10.1e}{len(per_sweep):>7}{certified.STATS['solves']:>7}{certified.STATS['dense']:>6}  "
                  f"{per_sweep}", flush=True)


if __name__ == "__main__":
    main()
