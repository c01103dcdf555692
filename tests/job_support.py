"""Shared by the job tests: wait until a background job reaches one of some states."""

from __future__ import annotations

import time
from pathlib import Path

from symalign.jobs.queue import FINAL, Job, JobQueue


def wait_for_job(queue: JobQueue | Path, job_id: str, states: tuple[str, ...] = FINAL, timeout: float = 240.0) -> Job:
    """The job once its state is in `states` (reaping dead workers' jobs meanwhile); fails after `timeout`."""
    queue = queue if isinstance(queue, JobQueue) else JobQueue(Path(queue) / "runs.sqlite")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = queue.get(job_id)
        if job.state in states:
            return job
        queue.reap()
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} still {queue.get(job_id).state} after {timeout} s")
