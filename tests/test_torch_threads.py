"""Helper threads that add no OpenMP team, and small SVDs on one thread (symalign.torch_threads): more
OpenMP threads than cores made every small parallel region of the main thread sleep and wake (the
GPT-2-small head Procrustes 8 → 37 ms a call beside an idle assignment pool, docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from symalign.match.solvers import SERIAL_SVD, procrustes
from symalign.match.weight.assignment import DeferredPermutations
from symalign.torch_threads import one_torch_thread

# Run in a fresh process: what counts is the threads that process holds, and a test worker's other tests
# may already have started OpenMP teams in threads of their own.
SCRIPT = """
import json, os, threading, torch
from concurrent.futures import ThreadPoolExecutor
from symalign.torch_threads import serial_pool
torch.set_num_threads(2)
(torch.randn(3000, 3000) + 1).sum()  # the main thread's own team exists before anything is counted

def tasks():
    return len(os.listdir("/proc/self/task"))

def work(_):
    return (torch.randn(3000, 3000) + 1).sum().item() and torch.get_num_threads()

out = {}
for name, make in (("serial", lambda: serial_pool(2, "t")), ("plain", lambda: ThreadPoolExecutor(2))):
    pool = make()
    list(pool.map(lambda _: None, range(2)))  # both workers started
    before = tasks()
    counts = list(pool.map(work, range(4)))
    out[name] = {"added": tasks() - before, "worker_threads": counts}
    pool.shutdown()
fresh = []
thread = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
thread.start()
thread.join()
out["main"], out["fresh"] = torch.get_num_threads(), fresh[0]
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_a_serial_pool_adds_no_openmp_threads_and_leaves_the_process_setting():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "2"})
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["serial"] == {"added": 0, "worker_threads": [1, 1, 1, 1]}
    assert out["plain"]["added"] >= 2  # the control: a plain pool's workers each start a team of their own
    assert out["main"] == out["fresh"] == 2  # this thread, and threads started later, keep the process's setting


def test_the_assignment_pool_runs_its_workers_on_one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        deferred = DeferredPermutations(None, None, {}, threads=2)
        seen = [deferred.pool.submit(torch.get_num_threads).result() for _ in range(4)]
        deferred.pool.shutdown()
        assert seen == [1, 1, 1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_one_torch_thread_restores_the_count_and_small_procrustes_runs_inside_it():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        c = torch.randn(12, SERIAL_SVD // 2, SERIAL_SVD // 2, generator=torch.Generator().manual_seed(0))
        with one_torch_thread():
            assert torch.get_num_threads() == 1
            g = procrustes(c)  # nested: the small-SVD block inside leaves this block's count alone
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        assert torch.allclose(g @ g.mT, torch.eye(c.shape[-1]).expand_as(g), atol=1e-5)
        assert torch.equal(procrustes(c), g)  # on one thread whatever the caller's count
    finally:
        torch.set_num_threads(before)
