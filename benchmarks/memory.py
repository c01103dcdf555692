"""Peak memory per parameter of symalign's commands on checkpoints of real shapes.

    python -m benchmarks.memory [--work DIR] [--only weight barrier ...] [--tinyllama] [--json FILE]

Builds (once, cached in --work) three GPT-2-small checkpoints (12 layers, width 768, vocabulary
50,257: 124M parameters, random weights, bf16 on disk) with a byte-level BPE tokenizer trained
on the bundled plays, laid out as a Hugging Face hub cache, and runs each command as a user
would (`symalign ... test-org/gpt2-small-0 ...` with HF_HUB_OFFLINE=1), one process each on 2
threads. It prints the peak resident memory of that process (ru_maxrss: what the machine must
have), bytes per parameter, the wall time and the issue's goal. The first row is the interpreter
with torch and transformers imported: the floor every command pays.

`--tinyllama` adds weight matching of two TinyLlama-shaped checkpoints (22 layers, width 2048,
1.1B parameters, bf16 on disk: 4.4 GB of disk and some minutes to build)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ORG = "test-org"
GIB = 2**30

# name -> (symalign arguments with {a} {b} {c} {out}, goal in bytes per parameter or None)
COMMANDS: dict[str, tuple[list[str], float | None]] = {
    "weight": (["align", "{a}", "{b}", "--method", "weight", "--classes", "all", "--max-sweeps", "2",
                "--out", "{out}"], 24),
    "activation": (["align", "{a}", "{b}", "--method", "activation", "--classes", "all", "--data", "shakespeare",
                    "--max-examples", "8", "--max-sweeps", "2", "--out", "{out}"], None),
    # at OT-ACTS' and activation matching's default 256 examples (issue #58's goal: 40 bytes per parameter)
    "activation-256": (["align", "{a}", "{b}", "--method", "activation", "--classes", "all", "--data", "shakespeare",
                        "--max-examples", "256", "--max-sweeps", "2", "--out", "{out}"], 40),
    "learned": (["align", "{a}", "{b}", "--method", "learned", "--classes", "all", "--data", "shakespeare",
                 "--max-sweeps", "2", "--steps", "3", "--out", "{out}"], 64),
    "barrier": (["barrier", "{a}", "{b}", "--data", "shakespeare", "--max-examples", "8", "--points", "3"], 24),
    "simplex": (["simplex", "{a}", "{b}", "{c}", "--method", "none", "--data", "shakespeare", "--resolution", "2",
                 "--max-examples", "8"], None),
    "merge": (["merge", "{a}", "{b}", "--align", "none", "--how", "average", "--data", "shakespeare",
               "--max-examples", "8", "--out", "{out}"], None),
    # OT fusion (issue #45): plans from weights, and from activations on a few examples
    "merge-ot-wts": (["merge", "{a}", "{b}", "--align", "ot-wts", "--ot-solver", "sinkhorn", "--data", "shakespeare",
                      "--max-examples", "8", "--out", "{out}"], None),
    "merge-ot-acts": (["merge", "{a}", "{b}", "--align", "ot-acts", "--data", "shakespeare", "--max-examples", "8",
                       "--out", "{out}"], None),
    "merge-ot-acts-256": (["merge", "{a}", "{b}", "--align", "ot-acts", "--data", "shakespeare", "--max-examples",
                           "256", "--out", "{out}"], 40),
}


def build(work: Path, shape: str, names: list[str], vocab: int | None) -> tuple[Path, int]:
    """Checkpoints of `shape` (offline_hub.REAL_CONFIGS) in work/hf; returns HF_HOME and the parameter count."""
    import torch

    from research.offline_hub import bpe_tokenizer, put_in_cache, real_config, write_checkpoint
    from symalign.data.text import shakespeare_text

    hf = work / "hf"
    config = real_config(shape)
    tokenizer = None
    for i, name in enumerate(names):
        if (hf / "hub" / f"models--{ORG}--{name}").is_dir():
            continue
        if tokenizer is None:
            tokenizer = bpe_tokenizer(shakespeare_text(), vocab or config.vocab_size)
        print(f"building {ORG}/{name} ({shape}, bf16)...", file=sys.stderr, flush=True)
        folder = write_checkpoint(config, work / name, seed=i, dtype=torch.bfloat16, tokenizer=tokenizer)
        put_in_cache(folder, f"{ORG}/{name}", hf)
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()
    from symalign.models.io import family_of

    with torch.device("meta"):
        params = sum(p.numel() for p in family_of(config).hf_class(config).parameters())
    return hf, params


def use_gpt2_pair(work: Path) -> int:
    """Build (once) the two GPT-2-small checkpoints gpt2-small-0 and -1, and point this process's hub at them,
    offline, before it loads them by hub id; returns their parameter count. For benchmarks that align in-process."""
    hf, params = build(work, "gpt2-small", ["gpt2-small-0", "gpt2-small-1"], None)
    os.environ.update(HF_HOME=str(hf), HF_HUB_OFFLINE="1")
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/symalign-memory", help="where the checkpoints are built and cached")
    parser.add_argument("--only", nargs="*", default=list(COMMANDS), choices=list(COMMANDS))
    parser.add_argument("--tinyllama", action="store_true", help="also weight-match two TinyLlama-shaped checkpoints")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    hf, params = build(work, "gpt2-small", [f"gpt2-small-{i}" for i in range(3)], None)
    refs = {k: f"{ORG}/gpt2-small-{i}" for i, k in enumerate("abc")}
    exe = [sys.executable, "-m", "symalign.cli"]
    rows = []

    def run(name: str, argv: list[str], count: int, goal: float | None) -> None:
        peak, seconds, code, last = measure_isolated(argv, hf)
        row = {"command": name, "parameters": count, "peak_gib": peak / GIB, "bytes_per_param": peak / count,
               "seconds": seconds, "goal": goal, "ok": code == 0 and (goal is None or peak / count <= goal)}
        if code != 0:
            row["error"] = last
        rows.append(row)
        print(f"{name:12s} {peak / GIB:6.2f} GiB {peak / count:6.1f} B/param {seconds:7.1f} s "
              f"goal {'-' if goal is None else f'≤ {goal:g}'} {'met' if row['ok'] else 'NOT MET'}"
              + (f"  ({last})" if code else ""), flush=True)

    print(f"GPT-2-small shapes: {params / 1e6:.1f}M parameters, bf16 on disk, hub ids from an offline cache")
    run("import", [sys.executable, "-c", "import torch, transformers; from transformers import GPT2LMHeadModel"],
        params, None)
    for name in args.only:
        template, goal = COMMANDS[name]
        argv = [a.format(out=str(work / f"out-{name}"), **refs) for a in template]
        run(name, exe + argv + ["--no-record", "--json"], params, goal)
    if args.tinyllama:
        hf_llama, llama_params = build(work, "tinyllama", ["tinyllama-0", "tinyllama-1"], 32000)
        argv = ["align", f"{ORG}/tinyllama-0", f"{ORG}/tinyllama-1", "--method", "weight", "--classes", "all",
                "--max-sweeps", "1", "--out", str(work / "out-tinyllama"), "--no-record", "--json"]
        hf = hf_llama
        run("tinyllama weight", exe + argv, llama_params, round(20 * GIB / llama_params, 1))  # goal: 20 GiB
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


def measure_isolated(argv: list[str], hf: Path) -> tuple[int, float, int, str]:
    """Run `argv` in a fresh child and read its own peak: a small wrapper process execs it and
    reports its RUSAGE_CHILDREN, so no other command's peak mixes in."""
    wrapper = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
               "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(p.returncode)")
    env = dict(os.environ, HF_HOME=str(hf), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="2", MKL_NUM_THREADS="2")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, env=env)
    seconds = time.perf_counter() - start
    out = proc.stdout.decode().strip().splitlines()
    peak = int(out[-1]) * 1024 if out and out[-1].isdigit() else 0
    last = (proc.stderr.decode().strip().splitlines() or [""])[-1]
    return peak, seconds, proc.returncode, last


if __name__ == "__main__":
    main()
