"""glibc's allocation policy around weight matching's sweeps (symalign.memory): inside `heap_kept`
a block of a few MiB comes from the heap and its pages are reused, outside it (after
`return_freed_memory`) it gets its own mapping, returned when freed. Read from glibc's own
counters (mallinfo2: bytes in mmapped blocks), so each check fails if the setting is not made."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys

import pytest
import torch

from symalign.memory import heap_kept, return_freed_memory

MIB = 1 << 20


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mallinfo2():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = MallInfo2
    return libc.mallinfo2


MALLINFO2 = _mallinfo2() if sys.platform.startswith("linux") else None
needs_glibc = pytest.mark.skipif(MALLINFO2 is None,
                                 reason="glibc ≥ 2.33 only (mallinfo2); the policy is a no-op elsewhere")


def mapped_bytes_of(nbytes: int, count: int = 1) -> int:
    """How many more bytes sit in mmapped blocks while `count` tensors of `nbytes` each are alive."""
    before = MALLINFO2().hblkhd
    tensors = [torch.empty(nbytes // 4, dtype=torch.float32) for _ in range(count)]
    during = MALLINFO2().hblkhd
    del tensors
    return during - before


def mapped_outside(nbytes: int, count: int) -> bool:
    """Whether blocks of `nbytes` get their own mappings: free chunks already in the heap serve a
    request whatever the threshold, so only what exceeds the heap's free bytes must be mapped."""
    free = MALLINFO2().fordblks
    return mapped_bytes_of(nbytes, count) >= nbytes * count - free


def in_a_fresh_process(check: str) -> None:
    """Run `check` (a function of this file) in a fresh process: a worker that ran other tests under glibc's own
    policy (zoo models set none) holds free heap chunks that serve even a 16 MiB block."""
    subprocess.run([sys.executable, __file__, check], check=True, capture_output=True, text=True)


@needs_glibc
def test_a_few_mib_come_from_the_heap_only_inside_heap_kept():
    in_a_fresh_process("few_mib_from_the_heap_only_inside")


@needs_glibc
def test_nested_blocks_restore_only_when_the_last_one_ends():
    in_a_fresh_process("nested_blocks_restore_at_the_last")


@needs_glibc
def test_the_block_changes_nothing_for_a_model_below_the_large_size():
    in_a_fresh_process("small_model_block_changes_nothing")


def small_model_block_changes_nothing():
    from symalign.memory import LARGE_MODEL_PARAMETERS

    assert return_freed_memory()
    with heap_kept(LARGE_MODEL_PARAMETERS):  # the zoo's weight matching: the process policy holds
        assert mapped_outside(2 * MIB, 48)
    with heap_kept(LARGE_MODEL_PARAMETERS + 1):
        assert mapped_bytes_of(2 * MIB, 4) == 0


def few_mib_from_the_heap_only_inside():
    assert return_freed_memory()
    assert mapped_outside(2 * MIB, 48)  # the process policy: their own mappings
    with heap_kept():
        assert mapped_bytes_of(2 * MIB, 4) == 0  # the heap
        assert mapped_bytes_of(16 * MIB) >= 16 * MIB  # above the kept threshold: still mapped
    assert mapped_outside(2 * MIB, 48)  # restored


def nested_blocks_restore_at_the_last():
    assert return_freed_memory()
    with heap_kept():
        with heap_kept():
            assert mapped_bytes_of(2 * MIB, 4) == 0
        assert mapped_bytes_of(2 * MIB, 48) == 0  # the outer block still holds
    assert mapped_outside(2 * MIB, 48)


FAULTS = """
import resource, torch
from symalign.memory import heap_kept, return_freed_memory
def faults():  # of ten 2 MiB tensors, each written, then freed
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        torch.ones(1 << 19, dtype=torch.float32)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start
assert return_freed_memory()
faults()
outside = faults()
with heap_kept():
    faults()  # the heap grows once
    inside = faults()
print(outside, inside)
"""


@needs_glibc
def test_heap_kept_reuses_freed_pages_instead_of_faulting_new_ones():
    """In a fresh process: what is in a heap already serves a request whatever the policy."""
    out = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True, check=True).stdout
    outside, inside = map(int, out.split())
    pages = 10 * 2 * MIB // 4096
    assert outside > pages // 2  # outside a block: each one's pages faulted in anew
    assert inside < pages // 4  # inside: the heap's pages are reused (idle: 0; under load the kernel may
    # reclaim some free heap pages, 1,024 of 5,120 seen beside two pytest workers)


LOADED = """
import resource, sys, torch
import symalign.memory as memory
from symalign.models import load_model
if sys.argv[1] == "large":
    memory.LARGE_MODEL_PARAMETERS = 0  # every checkpoint counts as a real one
load_model("zoo:vit-digits/0")
def faults():  # of ten 2 MiB tensors, each written, then freed
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        torch.ones(1 << 19, dtype=torch.float32)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start
faults()
print(faults())
"""


@needs_glibc
@pytest.mark.parametrize("size", ["zoo", "large"])
def test_only_a_real_checkpoint_sets_the_process_policy(size):
    """Loading a zoo model leaves glibc's own policy, which serves a freed size from the heap again: with the
    1 MiB threshold every activation of a megabyte or more was a fresh mapping, faulted in page by page (the
    gpt-shakespeare simplex test spent 52 s of 112 in the kernel). A checkpoint above LARGE_MODEL_PARAMETERS still
    sets the policy that keeps a real model's peak down."""
    out = subprocess.run([sys.executable, "-c", LOADED, size], capture_output=True, text=True, check=True).stdout
    pages = 10 * 2 * MIB // 4096
    if size == "zoo":
        assert int(out) < pages // 4  # the heap's pages reused
    else:
        assert int(out) > pages // 2  # each block mapped and faulted in anew


if __name__ == "__main__":  # in_a_fresh_process
    globals()[sys.argv[1]]()
