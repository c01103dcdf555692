"""Which machine a benchmark ran on, and how fast it multiplies: the line that makes two machines' timings comparable.

    python -m benchmarks.machine [--threads 2] [--device cpu]

Why: the project's 2-core machines differ. On 2026-12-02 the same code took 48-60 s of GPT-2-small weight
matching on a 2-core Intel Xeon and 97-122 s on a 2-core AMD EPYC, whose float32 matmul runs at about half the
Xeon's speed (docs/benchmarks.md). A timing without the machine's own matmul speed beside it cannot say whether
code or hardware moved. The speed is measured on the shape that dominates weight matching, an MLP's permutation
cost product (3072×768 times 768×3072, float32), the median of several runs."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

COST_SHAPE = (3072, 768, 3072)  # GPT-2-small's MLP cost product: [d_ff, d] @ [d, d_ff]


def first_cpu_fields() -> dict[str, str]:
    """The first processor's block of Linux's /proc/cpuinfo (lower-case keys); empty where there is none."""
    cpuinfo = Path("/proc/cpuinfo")
    fields: dict[str, str] = {}
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if not line.strip():
                break  # the first processor's block is enough
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
    return fields


def cpu_model() -> str:
    """The CPU's marketing name with its family, model and widest vector unit (Linux's /proc/cpuinfo), else what
    the platform module says. Why the numbers: "AMD EPYC" has named two machines here, a Zen 3 (family 25 model 1,
    AVX2, 87-108 GFLOP/s) and a Zen 4 (family 25 model 17, AVX-512, 137-171 GFLOP/s)."""
    fields = first_cpu_fields()
    name = fields.get("model name") or platform.processor() or platform.machine()
    detail = []
    if "cpu family" in fields and "model" in fields:
        detail.append(f"family {fields['cpu family']} model {fields['model']}")
    flags = set(fields.get("flags", "").split())
    if "avx512f" in flags:
        detail.append("AVX-512")
    elif "avx2" in flags:
        detail.append("AVX2")
    return f"{name} ({', '.join(detail)})" if detail else name


def matmul_gflops(threads: int, device: str = "cpu", repeats: int = 7) -> float:
    """GFLOP/s of the cost product's shape in float32 on `device` (CPU: on `threads` torch threads); median run."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        m, k, n = COST_SHAPE
        a = torch.randn(m, k, device=device)
        b = torch.randn(k, n, device=device)
        out = torch.empty(m, n, device=device)
        sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
        torch.mm(a, b, out=out)  # warm: the first call pays the library's set-up
        sync()
        seconds = []
        for _ in range(repeats):
            began = time.perf_counter()
            torch.mm(a, b, out=out)
            sync()
            seconds.append(time.perf_counter() - began)
        return 2 * m * k * n / statistics.median(seconds) / 1e9
    finally:
        torch.set_num_threads(previous)


def describe(threads: int, device: str = "cpu", gflops: float | None = None) -> str:
    """One line: the CPU (and GPU), its logical cores, and the cost product's float32 speed (`gflops`: already
    measured by the caller, who needs the number itself; else measured now)."""
    where = cpu_model()
    if device != "cpu":
        import torch

        where += f"; {torch.cuda.get_device_name(torch.device(device))}"
    m, k, n = COST_SHAPE
    return (f"machine: {where}, {os.cpu_count()} logical cores; float32 {m}×{k}×{n} matmul "
            f"{gflops if gflops is not None else matmul_gflops(threads, device):.0f} GFLOP/s on {device}"
            + (f" ({threads} threads)" if device == "cpu" else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    print(describe(args.threads, args.device))


if __name__ == "__main__":
    main()
