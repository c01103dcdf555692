"""Process-level memory settings for real checkpoints.

glibc raises its mmap threshold each time a large block is freed, so after a model's tensors
come and go, later 100 MB-class tensors land on the heap and freed memory stays with the
process: a barrier between two GPT-2-small checkpoints peaked 1.2 GB higher for that alone
(benchmarks/memory.py). A fixed threshold sends every large tensor to its own mapping, which is
returned to the system when the tensor is freed.

That costs time where the same large shapes are made and freed over and over: weight matching at
GPT-2-small scale made a fresh product, rotated weight and distance slice thousands of times, each
a new mapping faulted in page by page (90 s of system time in a 150 s run). `heap_kept` keeps the
smaller of them on the heap for the length of such a loop, then gives the free memory back
(benchmarks/weight_scale.py and benchmarks/memory.py, docs/benchmarks.md).

The policy is set when a checkpoint above LARGE_MODEL_PARAMETERS is loaded (symalign.models.io), not for the
zoo's: glibc's own policy raises its threshold to a freed block's size, so a training or evaluation step's
megabyte activations come from the heap again instead of a fresh mapping each (the gpt-shakespeare simplex test
spent 52 s of 112 in the kernel faulting them in; docs/benchmarks.md)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

# Above this many parameters memory, not float round-off, is what limits a run on a CPU machine:
# weight matching stores B in float32 between its float64 steps, learned matching's micro-batches
# are smaller. The zoo (under 1M parameters) is far below it, so its numbers never depend on it.
LARGE_MODEL_PARAMETERS = 50_000_000

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
DEFAULT_TRIM_BYTES = 128 * 1024  # glibc's default trim threshold
# While heap_kept: blocks under 4 MiB (a 768² product or weight, a distance slice) come
# from the heap, and up to 64 MiB free at its top stays mapped. Measured on GPT-2-small (docs/benchmarks.md):
# 32 MiB or no mmap at all was 4-9% faster still but peaked 0.2-0.4 GB higher (over 24 bytes per parameter).
KEPT_THRESHOLD_BYTES = 4 << 20
KEPT_TRIM_BYTES = 64 << 20
THRESHOLD_BYTES = 1 << 20
_done = False


@cache
def _libc():
    """glibc's handle, or None (another OS or C library: the policies here are then no-ops). Once per
    process: find_library may run ldconfig, and every weight-matching run asks."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def below_real_size(parameters: int | None) -> bool:
    """Whether a model of this many values is too small for the policies here (None: size not given)."""
    return parameters is not None and parameters <= LARGE_MODEL_PARAMETERS


def return_freed_memory(parameters: int | None = None) -> bool:
    """Fix glibc's mmap threshold at 1 MiB (once per process); False where there is no glibc, or where
    `parameters` (the size of the model that asks) is at most LARGE_MODEL_PARAMETERS: glibc's own policy stays."""
    global _done
    if below_real_size(parameters):
        return False
    if _done:
        return True
    libc = _libc()
    _done = libc is not None and bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES))
    return _done


_kept = 0  # heap_kept contexts open in this process (threads may nest them)
_kept_lock = threading.Lock()


@contextmanager
def heap_kept(parameters: int | None = None) -> Iterator[None]:
    """For the length of the block, blocks up to KEPT_THRESHOLD_BYTES come from the heap and freed
    memory stays in it, so the next tensor of the same size reuses pages already mapped instead of
    faulting in new ones. On leaving (the last of nested blocks), the process has return_freed_memory's
    settings (made now if they were not) and the heap's free pages are returned to the system.
    `parameters`: the model's size; at most LARGE_MODEL_PARAMETERS the block changes nothing, as the load of
    such a model set no policy (glibc's own already reuses the heap)."""
    global _kept, _done
    libc = _libc()
    if libc is None or below_real_size(parameters):
        yield
        return
    with _kept_lock:
        _kept += 1
        if _kept == 1:
            libc.mallopt(M_MMAP_THRESHOLD, KEPT_THRESHOLD_BYTES)
            libc.mallopt(M_TRIM_THRESHOLD, KEPT_TRIM_BYTES)
    try:
        yield
    finally:
        with _kept_lock:
            _kept -= 1
            if _kept == 0:
                _done = False  # the threshold was moved: the process policy is made again, in its one place
                return_freed_memory()
                libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_BYTES)
                libc.malloc_trim(0)
