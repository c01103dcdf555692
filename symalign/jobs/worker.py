"""The background worker: `python -m symalign.jobs.worker` takes queued jobs from the data folder's
queue one at a time and runs them through `symalign.jobs.kinds`, reporting progress and watching
for cancellation; it exits after some idle time (the app starts a new one when work is queued)."""

from __future__ import annotations

import argparse
import os
import time

from symalign.jobs.queue import Job, JobCancelled, JobQueue, register_worker, release_worker


class JobProgress:
    """The progress callback a job's workflow calls: records (phase, done, total) at most every
    `interval` seconds (and at the end of each phase), and raises JobCancelled once cancel was asked."""

    def __init__(self, queue: JobQueue, job_id: str, interval: float = 0.5):
        self.queue, self.job_id, self.interval = queue, job_id, interval
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int, note: str | None = None) -> None:
        now = time.monotonic()
        if now - self.last < self.interval and done < total:
            return
        self.last = now
        if self.queue.progress(self.job_id, phase, int(done), int(total), note):
            raise JobCancelled()

    def landed(self, run_id: str | None) -> None:
        """A run the job finished: listed on the job at once, so a page following it can show it."""
        if run_id:
            self.queue.add_run(self.job_id, run_id)


def run_job(queue: JobQueue, job: Job) -> str:
    """Run one claimed job to its final state; returns that state."""
    from symalign.jobs.kinds import run_kind
    from symalign.runs.recording import failure_message
    from symalign.runs.store import RunStore

    store = RunStore(queue.path, owner=job.owner)  # the runs belong to whoever queued the job
    try:
        ids = run_kind(job.kind, job.request, store, JobProgress(queue, job.id))
        for run_id in ids:
            queue.add_run(job.id, run_id)
        queue.end(job.id, "done")
        return "done"
    except JobCancelled:
        state, error = "cancelled", None
    except Exception as exc:  # a user error or a bug: one line in the queue, the worker goes on
        state, error = "failed", failure_message(exc)
    for run in store.list():  # runs this worker started since the job began belong to it (one job at a time)
        if run.pid == os.getpid() and run.created >= job.started:
            queue.add_run(job.id, run.id)
    queue.end(job.id, state, error)
    return state


def serve(queue: JobQueue, idle_exit: float = 60.0, poll: float = 0.3) -> int:
    """Take jobs until none has come for `idle_exit` seconds; returns how many ran.

    Leaving is two steps so no job is stranded: give up the pidfile (a submitter from then on starts a
    new worker), then look once more (a job queued before that, whose submitter saw this worker alive,
    is ours to run)."""
    ran, idle_since, pid = 0, time.monotonic(), os.getpid()
    while True:
        queue.reap()
        job = queue.claim(pid)
        if job is None and time.monotonic() - idle_since > idle_exit:
            release_worker(queue, pid)
            job = queue.claim(pid)
            if job is None:
                return ran
            register_worker(queue, pid)
        if job is None:
            time.sleep(poll)
            continue
        run_job(queue, job)
        ran, idle_since = ran + 1, time.monotonic()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle-exit", type=float, default=60.0, help="seconds without work before exiting")
    args = parser.parse_args(argv)
    serve(JobQueue(), args.idle_exit)


if __name__ == "__main__":
    main()
