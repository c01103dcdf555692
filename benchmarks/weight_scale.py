"""GPT-2-small weight matching as a user runs it (issue #58): `symalign align A B --method weight
--classes all` on two local-cache GPT-2-small checkpoints (random weights, bf16 on disk, built and
cached by benchmarks/memory.py's builder), one process per run, 2 threads unless told.

    python -m benchmarks.weight_scale [--work DIR] [--settings before after ...] [--threads 2]
        [--barrier] [--json FILE] [--device cuda]

Settings: `before` is issue #58's starting point (float64 cost matmuls, stop below 1e-5 relative
improvement), `float32` changes the precision, `after` is today's defaults (float32 at this size,
the stopping rule unchanged: research/experiments/stopping_rule.py shows why), `three-sweeps` stops below 1e-3
(3 sweeps here). Per run: the
command's wall time, weight matching's own seconds and sweeps, the final distance and, with
`--barrier`, the 21-point barrier on the memory benchmark's data (the bundled plays through the
checkpoints' BPE tokenizer, 8 windows) and its difference from the `before` run's. The first line names the
machine and its float32 matmul speed (benchmarks/machine.py): the ≤ 60 s goal holds on some 2-core machines and
not on others, and that line says which kind this was."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import describe  # the CPU and its matmul speed beside the timings
from benchmarks.memory import ORG, build  # the same checkpoints

SETTINGS = {
    "before": ["--precision", "float64", "--min-improvement", "1e-5"],
    "float32": ["--precision", "float32", "--min-improvement", "1e-5"],
    "after": [],  # today's defaults (inner passes on at this size since issue #73)
    "plain": ["--inner-passes", "0"],  # the defaults before issue #73's inner passes
    "three-sweeps": ["--min-improvement", "1e-3"],  # stops after sweep 3 at this pair (improvement 7.4e-4)
    "inner-2": ["--inner-passes", "2"],  # fewer inner passes: more sweeps, more time (docs/benchmarks.md)
    "inner-4": ["--inner-passes", "4"],
}


def symalign(argv: list[str], hf: Path, threads: int) -> tuple[float, str]:
    """(wall seconds, stdout) of one `symalign` command in a fresh process."""
    env = dict(os.environ, HF_HOME=str(hf), HF_HUB_OFFLINE="1", OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "symalign.cli", *argv], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"symalign {' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    return seconds, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/symalign-memory")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--threads", nargs="+", type=int, default=[2])
    parser.add_argument("--barrier", action="store_true", help="also the 21-point barrier of each result")
    parser.add_argument("--json", default=None)
    parser.add_argument("--device", default=None, help="where the matcher's work runs (`symalign align --device`; "
                        "default: the command's own)")
    args = parser.parse_args()
    device = ["--device", args.device] if args.device else []
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    hf, params = build(work, "gpt2-small", [f"gpt2-small-{i}" for i in range(2)], None)
    machine = describe(max(args.threads), args.device or "cpu")  # before the runs, on an idle machine
    print(machine, flush=True)
    a, b = f"{ORG}/gpt2-small-0", f"{ORG}/gpt2-small-1"
    rows = []
    for threads in args.threads:
        for name in args.settings:
            out = work / f"weight-{name}-{threads}t"
            wall, _ = symalign(["align", a, b, "--method", "weight", "--classes", "all", "--out", str(out),
                                "--no-record", *device, *SETTINGS[name]], hf, threads)
            report = json.loads((out / "alignment.json").read_text())
            sweeps = [s for s in report["sweeps"] if s.get("step") is None]
            row = {"setting": name, "threads": threads, "flags": " ".join(SETTINGS[name]) or "(defaults)",
                   "wall_s": wall, "matching_s": report["sweeps"][-1]["seconds"], "sweeps": len(sweeps) - 1,
                   "inner_passes": sum(s.get("inner_passes") or 0 for s in report["sweeps"]),
                   "distance": report["distance_after"], "stopped": report["sweeps"][-1].get("stopped")}
            if args.barrier:
                _, text = symalign(["barrier", a, str(out), "--data", "shakespeare", "--max-examples", "8",
                                    "--points", "21", *device, "--json"], hf, threads)
                row["barrier"] = json.loads(text)["barrier"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    base = {r["threads"]: r for r in rows if r["setting"] == "before"}
    print(f"\nGPT-2-small ({params / 1e6:.0f}M parameters), weight matching, all classes, "
          f"device {args.device or 'default'}; {machine}\n")
    print("| setting | flags | threads | wall s | matching s | sweeps (inner passes) | distance | barrier | "
          "barrier vs before |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ref = base.get(r["threads"])
        vs = (f"{100 * (r['barrier'] - ref['barrier']) / abs(ref['barrier']):+.2f}%"
              if ref and "barrier" in r and "barrier" in ref else "—")
        print(f"| {r['setting']} | {r['flags']} | {r['threads']} | {r['wall_s']:.1f} | {r['matching_s']:.1f} | "
              f"{r['sweeps']} ({r['inner_passes']}) | {r['distance']:.7f} | {r.get('barrier', float('nan')):.5f} | "
              f"{vs} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
