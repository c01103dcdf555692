"""Choose the compute device once: `auto` means CUDA, then MPS, then CPU.

torch is imported inside the functions: the app's pages import this module, and Home must paint
before torch (1.5 s) is loaded."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from symalign.errors import SymalignError

if TYPE_CHECKING:
    import torch

# cuBLAS picks its reduction order by workspace; a fixed one makes its products repeatable (PyTorch's
# reproducibility notes). It must be set before cuBLAS starts, so it is set when symalign is imported.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def pick_device(name: str = "auto") -> torch.device:
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise SymalignError("--device cuda asked for, but no CUDA device is available (use auto or cpu)")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise SymalignError("--device mps asked for, but MPS is not available (use auto or cpu)")
    if name not in ("cpu", "cuda", "mps"):
        # a run uses one GPU, the first visible one (Ray gives each sweep cell its own the same way)
        other = " (for a GPU other than the first, run with CUDA_VISIBLE_DEVICES=N and --device cuda)" \
            if name.startswith("cuda:") else ""
        raise SymalignError(f"unknown device {name!r}; choose auto, cpu, cuda or mps{other}")
    return torch.device(name)


def describe_devices() -> dict[str, str | bool]:
    """What the machine offers, for the app's sidebar and `symalign` reports."""
    import torch

    info: dict[str, str | bool] = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": False}
    if info["cuda"]:
        info["cuda_name"] = torch.cuda.get_device_name(0)
    mps = getattr(torch.backends, "mps", None)
    info["mps"] = bool(mps is not None and mps.is_available())
    return info


@contextmanager
def reproducible(device: torch.device | str) -> Iterator[None]:
    """On CUDA, deterministic kernels while the block runs, so the same seed gives the same learned
    transform (bitwise, as on the CPU): atomic-add backward kernels otherwise sum in a different order
    each run. A no-op on other devices."""
    import torch

    if torch.device(device).type != "cuda":
        yield
        return
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def threads_for_load(cores: int | None = None) -> int:
    """CPU threads that leave room for what else is running: the cores minus the 1-minute load
    average, at least 1. Measured (benchmarks/guided_demo.py, 2 cores): the guided demo took 26 s
    alone; beside another alignment it took 124 s on 2 threads (four busy threads on two cores spin
    against each other) and 43 s on 1."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not available on this platform
        return cores
    busy = round(load) if load >= 0.75 else 0  # an idle machine's background noise is not a user's work
    return max(1, cores - busy)


@contextmanager
def polite_threads() -> Iterator[int]:
    """Run the block on `threads_for_load()` torch threads (never more than it had), then restore them."""
    import torch

    from symalign.torch_threads import torch_threads_set

    threads = min(torch.get_num_threads(), threads_for_load())
    with torch_threads_set(threads):
        yield threads
