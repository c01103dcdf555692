"""CUDA: does every path agree with the CPU, and how fast is it at GPT-2-small shapes?

    python -m benchmarks.cuda [--check] [--timings] [--work DIR] [--json FILE]

`--check` runs each workflow on the zoo twice, on `cpu` and on `cuda`, through the same Python API
the command line uses (barrier; weight, activation and learned matching with their barriers;
universe alignment and the simplex; Fisher and RegMean merging; transport), and prints both
numbers and their difference. Matchers solve in float64 on either device, so their barriers should
agree to a few 1e-4 (learned matching: within its own run-to-run spread, since GPU reductions are
not bitwise those of the CPU).

`--timings` (`--device cpu` for the same table on the CPU) builds two GPT-2-small checkpoints (12 layers, width 768,
vocabulary 50,257: 124M parameters, random weights, bf16, a byte-level BPE tokenizer; as benchmarks/memory.py does) laid
out as an offline hub cache, and times on cuda: loading both by hub id, weight matching (all
classes, 3 sweeps), learned matching's steps per second (all classes, text windows of 128 tokens),
and a 21-point barrier at the default evaluation (256 windows)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROWS: list[dict] = []
DEVICES = ["cpu", "cuda"]  # --devices: the pair compared (cpu cpu checks the script itself without a GPU)
ONLY: list[str] = []  # --only: substrings of the cases to run


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn):
    sync()
    start = time.perf_counter()
    value = fn()
    sync()
    return value, time.perf_counter() - start


def compare(name: str, fn) -> None:
    """fn(device) -> a number, on cpu and on cuda."""
    if ONLY and not any(o in name for o in ONLY):
        return
    row = {"case": name}
    first, second = DEVICES
    for device in DEVICES:
        try:
            row[device], row[f"{device}_s"] = timed(lambda d=device: fn(d))
        except Exception as exc:  # a failure on one device is the finding: report it and go on
            row[device], row[f"{device}_s"] = None, 0.0
            row[f"{device}_error"] = f"{type(exc).__name__}: {exc}"
    ok = row[first] is not None and row[second] is not None
    row["diff"] = abs(row[first] - row[second]) if ok else None
    ROWS.append(row)
    def fmt(v, spec=".5f"):
        return "-" if v is None else format(v, spec)
    print(f"{name:48s} {first} {fmt(row[first]):>9s} ({row[first + '_s']:5.1f} s)  {second} {fmt(row[second]):>9s} "
          f"({row[second + '_s']:5.1f} s)  |diff| {fmt(row['diff'], '.1e')}"
          + "".join(f"  [{d}: {row[d + '_error']}]" for d in DEVICES if d + "_error" in row), flush=True)


def check() -> None:
    from symalign.match.config import AlignConfig
    from symalign.workflows.execute import align_run, barrier_run
    from symalign.workflows.many import simplex_run
    from symalign.workflows.merging import merge_run, transport_run

    gpt = [f"zoo:gpt-shakespeare/{i}" for i in range(3)]
    vit = [f"zoo:vit-digits/{i}" for i in range(3)]

    def aligned_barrier(pair, method, data, **options):
        def run(device):
            config = AlignConfig(method=method, preset="all", data=data, device=device, **options)
            return align_run(pair[0], pair[1], config, out=f"/tmp/cuda-check-{method}-{device}").curve.barrier
        return run

    compare("barrier gpt 0-1 (vanilla)", lambda d: barrier_run(gpt[0], gpt[1], device=d)[1].barrier)
    compare("barrier vit 0-1 (vanilla)", lambda d: barrier_run(vit[0], vit[1], device=d)[1].barrier)
    compare("weight all gpt 0-1: barrier", aligned_barrier(gpt, "weight", None))
    compare("activation all gpt 0-1: barrier", aligned_barrier(gpt, "activation", "shakespeare"))
    compare("learned all vit 0-1 (200 steps): barrier", aligned_barrier(vit, "learned", "digits", steps=200))
    compare("learned all gpt 0-1 (100 steps): barrier", aligned_barrier(gpt, "learned", "shakespeare", steps=100))
    compare("simplex weight gpt 0,1,2 (res 4): max barrier",
            lambda d: simplex_run(gpt, AlignConfig(method="weight", preset="all", device=d),
                                  resolution=4)[1].max_barrier)
    for how in ("fisher", "regmean"):
        compare(f"merge weight+{how} gpt 0,1: merged loss",
                lambda d, how=how: merge_run(gpt[:2], "weight", how, "shakespeare", out=f"/tmp/cuda-merge-{how}-{d}",
                                             device=d).result.report["merged"]["loss"])
    compare("transport weight vit 0->1 (flipped): task loss at 1",
            lambda d: transport_run(vit[0], "zoo:vit-digits-flipped/0", vit[1], [1.0], out=f"/tmp/cuda-tr-{d}",
                                    device=d).result.task_loss[0])


def timings(work: Path, device: str, points: int, steps: int) -> None:
    from benchmarks.memory import ORG, use_gpt2_pair  # the same checkpoints
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.models import load_model
    from symalign.workflows.execute import barrier_run

    params = use_gpt2_pair(work)
    name = torch.cuda.get_device_name(0) if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(f"GPT-2-small shapes ({params / 1e6:.1f}M parameters, bf16 on disk) on {name}, torch {torch.__version__}")

    def row(what: str, seconds: float, note: str) -> None:
        peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
        ROWS.append({"timing": what, "seconds": seconds, "note": note, "peak_gpu_gib": peak})
        print(f"{what:40s} {seconds:8.1f} s  {note}" + (f"  (peak GPU {peak:.2f} GiB)" if peak is not None else ""),
              flush=True)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()

    (a, b), s = timed(lambda: [load_model(f"{ORG}/gpt2-small-{i}") for i in range(2)])
    row("load both by hub id", s, "")
    result, s = timed(lambda: align(a, b, AlignConfig(method="weight", preset="all", max_sweeps=3, device=device)))
    sweeps = result.report.sweeps
    row("weight matching, all classes, 3 sweeps", s, f"solves {sweeps[-1].seconds:.1f} s, {sweeps[-1].stopped or ''}")
    (_, curve), s = timed(lambda: barrier_run(a, b, "shakespeare", points=points, device=device))
    row(f"barrier, {points} points, 256 windows of 128", s,
        f"{s / points:.2f} s per point, device-sized batches, barrier {curve.barrier:.6f}")

    config = AlignConfig(method="learned", preset="all", data="shakespeare", device=device, steps=steps,
                         patience=steps, max_sweeps=1)
    result, s = timed(lambda: align(a, b, config))
    summary = result.report.learned_summary
    row(f"learned matching, {summary.steps} steps", s,
        f"{summary.steps / summary.seconds:.2f} steps/s over {summary.seconds:.1f} s of steps "
        f"(batch {config.batch_size})")

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--timings", action="store_true")
    parser.add_argument("--work", default="/tmp/symalign-memory")
    parser.add_argument("--json", default=None)
    parser.add_argument("--devices", nargs=2, default=DEVICES, help="--check: the two devices compared")
    parser.add_argument("--device", default="cuda", help="--timings: where (cpu gives the same table for contrast)")
    parser.add_argument("--points", type=int, default=21, help="--timings: barrier points")
    parser.add_argument("--steps", type=int, default=30, help="--timings: learned steps")
    parser.add_argument("--only", nargs="*", default=[], help="substrings of the --check cases to run")
    args = parser.parse_args()
    DEVICES[:] = args.devices
    ONLY[:] = args.only
    if "cuda" in (DEVICES if args.check else []) + ([args.device] if args.timings else []) \
            and not torch.cuda.is_available():
        sys.exit("no CUDA device: this benchmark compares the CPU with a GPU")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"{gpu}, torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    try:
        if args.check:
            check()
        if args.timings:
            timings(Path(args.work), args.device, args.points, args.steps)
    finally:
        if args.json:
            Path(args.json).write_text(json.dumps(ROWS, indent=2, default=str))


if __name__ == "__main__":
    main()
