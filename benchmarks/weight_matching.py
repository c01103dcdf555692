"""Weight matching at real model sizes: GPT-2-small shapes (12 layers, width 768, 12 heads,
MLP 3072, vocabulary 50257) and ViT-B/16 shapes, random weights, B a planted transform of A.

Prints total time and the main thread's share of it (cProfile, cumulative) in SVDs (Procrustes), cost
matmuls (correlations and head circuits), applying transforms and waiting for the assignment solves (which
run in their pool beside the main thread), per device; then the solves and each sweep's seconds. With
CUDA_LAUNCH_BLOCKING=1 the device's time is seen by the functions that launch its kernels.

    python -m benchmarks.weight_matching [--models gpt2 vit roberta] [--devices cpu cuda] [--sweeps 3] [--layers 12]
        [--pair planted|independent] [--classes full|zhang]

`--pair independent`: B is another random model (seed 1), not a transform of A: the assignments are
as hard as between two unrelated trainings. `--sweeps 0`: run to the default stopping rule (30
sweeps at most).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import torch

from symalign.match.weight.assignment import STATS
from symalign.match.weight.descent import boundary_tensors, weight_match
from symalign.models import canonicalize, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.sweeps.zhang import MATCHING
from symalign.symmetry.random import random_transform

FULL = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}
ZHANG = MATCHING  # Zhang et al.'s classes, as the zhang-table2 preset runs them
ROWS = {  # (module file's tail or "~" for a builtin, function name) -> the column it adds to
    ("match/solvers.py", "cross"): "cost", ("match/heads.py", "head_cost"): "cost",
    ("~", "<built-in method torch._C._linalg.linalg_svd>"): "SVD",
    ("match/mapped.py", "_move"): "apply", ("match/deferred.py", "settle"): "wait",
}


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def split(profile: cProfile.Profile) -> dict[str, float]:
    """Cumulative main-thread seconds per column of ROWS."""
    out = dict.fromkeys(ROWS.values(), 0.0)
    for (path, _, name), (_, _, _, cumulative, _) in pstats.Stats(profile).stats.items():
        for (tail, fn), column in ROWS.items():
            if fn == name and path.endswith(tail):
                out[column] += cumulative
    return out


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
    print(f"{'model':<8}{'device':<8}{'total s':>9}{'cost s':>8}{'SVD s':>8}{'apply s':>9}{'wait s':>8}"
          f"{'rel err':>10}{'sweeps':>7}{'solves':>7}{'dense':>6}  seconds per sweep")
    for family in args.models:
        a = canonicalize(random_model(big_config(family, args.layers), seed=0))
        b = (transformed(a, random_transform(spec_of(a), spec_of(a).fit(classes), seed=1)) if args.pair == "planted"
             else canonicalize(random_model(big_config(family, args.layers), seed=1)))
        spec = spec_of(a)
        boundary = boundary_tensors(a)
        for device in args.devices:
            ta = {k: v.to(device) for k, v in a.tensors.items()}
            tb = {k: v.to(device) for k, v in b.tensors.items()}
            STATS.clear()
            profile = cProfile.Profile()
            sync()
            start = time.perf_counter()
            profile.enable()
            transform, history = weight_match(ta, tb, spec, spec.fit(classes), boundary, max_sweeps=sweeps)
            sync()
            profile.disable()
            total = time.perf_counter() - start
            err = history[-1].distance
            times = split(profile)
            per_sweep = [round(h.seconds - before.seconds, 1) for before, h in zip(history, history[1:]) if h.sweep > 0]
            print(f"{family:<8}{device:<8}{total:>9.1f}{times['cost']:>8.1f}{times['SVD']:>8.1f}"
                  f"{times['apply']:>9.1f}{times['wait']:>8.1f}"
                  f"{err:>10.1e}{len(per_sweep):>7}{STATS['solves']:>7}{STATS['dense']:>6}  {per_sweep}", flush=True)


if __name__ == "__main__":
    main()
