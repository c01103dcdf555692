"""Process-level memory settings for real checkpoints.

glibc raises its mmap threshold each time a large block is freed, so after a model's tensors
come and go, later 100 MB-class tensors land on the heap and freed memory stays with the
process: a barrier between two GPT-2-small checkpoints peaked 1.2 GB higher for that alone
(benchmarks/memory.py). A fixed threshold sends every large tensor to its own mapping, which is
returned to the system when the tensor is freed."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# Above this many parameters memory, not float round-off, is what limits a run on a CPU machine:
# weight matching stores B in float32 between its float64 steps, learned matching's micro-batches
# are smaller. The zoo (under 1M parameters) is far below it, so its numbers never depend on it.
LARGE_MODEL_PARAMETERS = 50_000_000

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter numbers (malloc.h)
THRESHOLD_BYTES = 1 << 20
_done = False


def return_freed_memory() -> bool:
    """Fix glibc's mmap threshold at 1 MiB (once per process); False where there is no glibc."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _done = bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
    return _done

