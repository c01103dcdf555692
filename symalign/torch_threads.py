"""torch's CPU threads where many small parallel regions meet other busy threads.

torch's CPU ops run on GNU OpenMP, and every thread that enters a parallel region gets a team of
`torch.get_num_threads()` OpenMP threads, kept for as long as that thread lives. Once a process holds
more OpenMP threads than it has cores, libgomp stops spinning at its barriers and sleeps on a futex
instead, in every team, the main one included. Work made of many small parallel regions (the batched
64×64 SVDs of head Procrustes, MKL's SVD of a 767² residual correlation) then pays a wake-up per
region: measured on 2 cores (docs/benchmarks.md), the main thread's 12×64×64 Procrustes took 8 ms
before a two-thread pool had run one torch op and 34–37 ms after, with the pool idle; a 767² one
226 → 448 ms. Large matmuls did not move (one region each).

A pool from `serial_pool` runs each worker on one torch thread (no team), so the process keeps the
OpenMP threads the main thread already had. Helpers beside a busy main thread on a small machine gain
nothing from teams of their own anyway: the cores are the main thread's.

The other side: while a helper computes, a team of two on two cores waits at every barrier for a partner
that the helper has descheduled. `one_torch_thread` runs a block of small regions on the calling thread
alone: the 12×64×64 Procrustes took 16 ms on two threads beside a busy assignment solve and 7.4 ms on
one (7.7 against 8.6 ms with nothing beside it: one thread is never worse at that size)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager

import torch


def serial_pool(workers: int, prefix: str) -> ThreadPoolExecutor:
    """`workers` threads, started now, each on one torch thread; torch's setting for the rest of the
    process (this thread and threads started later) is left as it was."""
    before = torch.get_num_threads()
    started = threading.Barrier(workers, timeout=60)  # a worker that never starts breaks it, not this thread
    pool = ThreadPoolExecutor(workers, thread_name_prefix=prefix, initializer=_one_torch_thread)
    # every worker blocks on the barrier, so each submit starts a new thread, and all initialisers have run
    # before torch's process-wide default (which set_num_threads also wrote) is put back
    wait([pool.submit(started.wait) for _ in range(workers)])
    torch.set_num_threads(before)
    return pool


def _one_torch_thread() -> None:
    """This thread on one torch thread. torch sets a thread's OpenMP count from its process-wide default on
    the thread's first op (lazily), which would undo a setting made before it: so that first op comes first."""
    torch.get_num_threads()
    torch.set_num_threads(1)


@contextmanager
def torch_threads_set(threads: int) -> Iterator[None]:
    """The block's torch ops on `threads` threads of this thread; this thread's count (and the process default,
    which set_num_threads also writes) restored after. Other threads keep their own counts throughout."""
    before = torch.get_num_threads()
    if threads == before:  # nothing to set: the process default is left alone too
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def one_torch_thread():
    """The block's torch ops on this thread alone (small parallel regions beside busy threads)."""
    return torch_threads_set(1)
