"""Background jobs: work the app hands to a worker process instead of running it in the page.

Why a table in the run database: the history is the source of truth (issue #13). A job row is
written when it is queued and moves queued → running → done | failed | cancelled, with its live
progress (phase, done, total) and the runs it recorded; SQLite's transactions keep the file sound
when a worker is killed mid-job, and a queued row outlives the app. A job whose worker died is
marked failed the next time anyone reads the queue. This module imports nothing heavy (no torch),
so the app can read the queue on its first paint."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

from symalign.errors import SymalignError
from symalign.runs.database import connect, database_path, ensure_table, pid_alive

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,              -- barrier | align | align-many | simplex
    state TEXT NOT NULL,             -- queued | running | done | failed | cancelled
    label TEXT NOT NULL DEFAULT '',
    request TEXT NOT NULL,           -- the job's arguments (JSON)
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    pid INTEGER,                     -- the worker running it
    phase TEXT NOT NULL DEFAULT '',
    done INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    cancel INTEGER NOT NULL DEFAULT 0,
    runs TEXT NOT NULL DEFAULT '[]', -- run ids the job recorded
    error TEXT,
    owner TEXT NOT NULL DEFAULT '',  -- the app session that queued it ('' for the host)
    phase_started REAL               -- when the current phase began (its time left is read at its own rate)
);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
"""
# Columns added after the first release: an older database gets them in place.
MIGRATIONS = {"owner": "ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
              "phase_started": "ALTER TABLE jobs ADD COLUMN phase_started REAL"}
STATES = ("queued", "running", "done", "failed", "cancelled")
RESUME_WINDOW = 600.0  # seconds: a job a browser finished this recently is shown again when it returns
FINAL = ("done", "failed", "cancelled")
WORKER_DIED = "the worker process stopped before the job finished (killed or crashed)"


def _like_prefix(text: str) -> str:
    """`text` for a LIKE pattern, its wildcards escaped (ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class JobCancelled(Exception):
    """Raised inside a job's progress callback once the user has asked to cancel it."""


@dataclass
class Job:
    id: str
    kind: str
    state: str
    request: dict
    created: float
    label: str = ""
    started: float | None = None
    finished: float | None = None
    pid: int | None = None
    phase: str = ""
    done: int = 0
    total: int = 0
    cancel: int = 0
    runs: list[str] = field(default_factory=list)
    error: str | None = None
    owner: str = ""
    phase_started: float | None = None

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def title(self) -> str:
        return self.label or f"{self.kind} {self.request.get('method', '')}".strip()


class JobQueue:
    """The jobs of one data folder (the same runs.sqlite as the run history)."""

    def __init__(self, path: str | Path | None = None):
        self.path = database_path(path)
        ensure_table(self.path, SCHEMA, "jobs", MIGRATIONS)

    def _connect(self):
        return connect(self.path)

    def submit(self, kind: str, request: dict, label: str = "", owner: str = "") -> str:
        from symalign.jobs.kinds import JOB_KINDS

        if kind not in JOB_KINDS:
            raise SymalignError(f"unknown job kind {kind!r}; known: {', '.join(JOB_KINDS)}")
        job_id = time.strftime("job-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._connect() as db:
            db.execute("INSERT INTO jobs (id, kind, state, label, request, created, owner) "
                       "VALUES (?, ?, 'queued', ?, ?, ?, ?)", (job_id, kind, label, json.dumps(request), time.time(),
                                                               owner))
        return job_id

    def claim(self, pid: int) -> Job | None:
        """Take the oldest queued job for worker `pid` (atomic: two workers never take the same job)."""
        with self._connect() as db:
            row = db.execute("SELECT id FROM jobs WHERE state='queued' AND cancel=0 "
                             "ORDER BY created LIMIT 1").fetchone()
            if row is None:
                return None
            taken = db.execute("UPDATE jobs SET state='running', pid=?, started=? WHERE id=? AND state='queued'",
                               (pid, time.time(), row["id"])).rowcount
        return self.get(row["id"]) if taken else None

    def progress(self, job_id: str, phase: str, done: int, total: int, note: str | None = None) -> bool:
        """Record progress (shown as "phase · note"); returns True when the user asked to cancel the job."""
        label = f"{phase} · {note}" if note else phase
        with self._connect() as db:
            # SET reads the old row: the clock restarts only when the phase changes, not its note (the part
            # under way: a paper table's rows are one phase, its time left read over the whole run, issue #109)
            db.execute("UPDATE jobs SET phase_started = CASE WHEN (phase = ? OR phase LIKE ? ESCAPE '\\') AND "
                       "phase_started IS NOT NULL THEN phase_started ELSE ? END, phase=?, done=?, total=? WHERE id=?",
                       (phase, _like_prefix(phase) + " · %", time.time(), label, done, total, job_id))
            return bool(db.execute("SELECT cancel FROM jobs WHERE id=?", (job_id,)).fetchone()["cancel"])

    def add_run(self, job_id: str, run_id: str) -> None:
        """List a run on the job (once: a run reported as it lands is not added again at the end)."""
        with self._connect() as db:
            runs = json.loads(db.execute("SELECT runs FROM jobs WHERE id=?", (job_id,)).fetchone()["runs"])
            if run_id not in runs:
                db.execute("UPDATE jobs SET runs=? WHERE id=?", (json.dumps(runs + [run_id]), job_id))

    def find(self, kind: str, request: dict | None = None, since: float = 0.0,
             states: tuple[str, ...] = ("queued", "running"), owner: str | None = None) -> Job | None:
        """The newest job of `kind` in `states` active after `since` (created then, or finished then: a long
        job that ended a minute ago counts as recent) (with `request`: that exact request; with `owner`:
        that visitor's): how a page finds work it (or a tab before it) started, and how a repeated request
        joins it."""
        self.reap()
        marks = ", ".join("?" * len(states))
        with self._connect() as db:
            rows = db.execute(f"SELECT * FROM jobs WHERE kind=? AND COALESCE(finished, created)>=? "
                              f"AND state IN ({marks}) "
                              "ORDER BY created DESC", (kind, since, *states)).fetchall()
        wanted = None if request is None else json.loads(json.dumps(request))
        for row in rows:
            job = self._job(row)
            if (wanted is None or job.request == wanted) and (owner is None or job.owner == owner):
                return job
        return None

    def end(self, job_id: str, state: str, error: str | None = None) -> None:
        if state not in FINAL:
            raise ValueError(state)
        with self._connect() as db:
            db.execute("UPDATE jobs SET state=?, finished=?, error=? WHERE id=? AND state IN ('queued', 'running')",
                       (state, time.time(), error, job_id))

    def cancel(self, job_id: str) -> None:
        """Ask for a job to stop: a queued one is cancelled at once, a running one at its next progress."""
        self.get(job_id)
        with self._connect() as db:
            db.execute("UPDATE jobs SET cancel=1 WHERE id=?", (job_id,))
            db.execute("UPDATE jobs SET state='cancelled', finished=? WHERE id=? AND state='queued'",
                       (time.time(), job_id))

    def reap(self) -> int:
        """Mark running jobs whose worker is gone as failed; returns how many."""
        with self._connect() as db:
            rows = db.execute("SELECT id, pid FROM jobs WHERE state='running'").fetchall()
            dead = [r["id"] for r in rows if not pid_alive(r["pid"])]
            for job_id in dead:
                db.execute("UPDATE jobs SET state='failed', finished=?, error=? WHERE id=? AND state='running'",
                           (time.time(), WORKER_DIED, job_id))
        return len(dead)

    def get(self, job_id: str) -> Job:
        with self._connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE id=?", (job_id,)).fetchone()
        if row is None:
            raise SymalignError(f"no job {job_id!r} in {self.path}")
        return self._job(row)

    def list(self, state: str | None = None, limit: int = 200) -> list[Job]:
        """Newest first."""
        self.reap()
        query, args = "SELECT * FROM jobs", []
        if state:
            query, args = query + " WHERE state=?", [state]
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY created DESC LIMIT ?", args + [limit]).fetchall()
        return [self._job(r) for r in rows]

    def active(self, owner: str) -> int:
        """Jobs of one owner still queued or running (a guest's are capped)."""
        self.reap()
        with self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM jobs WHERE owner=? AND state IN ('queued', 'running')",
                              (owner,)).fetchone()[0]

    def pending(self) -> int:
        with self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM jobs WHERE state='queued'").fetchone()[0]

    @staticmethod
    def _job(row: sqlite3.Row) -> Job:
        d = dict(row)
        d["request"], d["runs"] = json.loads(d["request"]), json.loads(d["runs"])
        return Job(**d)


def worker_pidfile(path: Path) -> Path:
    return path.parent / "worker.pid"


def worker_alive(queue: JobQueue) -> bool:
    try:
        pid = int(worker_pidfile(queue.path).read_text().strip())
    except (OSError, ValueError):
        return False
    return pid_alive(pid)


def release_worker(queue: JobQueue, pid: int) -> None:
    """A worker about to exit gives up the pidfile (when it still names it), so that from then on a
    submitter starts a new worker instead of trusting one that is on its way out (issue #55's CI
    failure: a job queued in the second a worker took to exit waited forever)."""
    path = worker_pidfile(queue.path)
    try:
        if int(path.read_text().strip()) == pid:
            path.unlink()
    except (OSError, ValueError):
        pass


def register_worker(queue: JobQueue, pid: int) -> None:
    """A worker that took a job after releasing the pidfile names itself again, unless another has."""
    try:
        with open(worker_pidfile(queue.path), "x") as f:
            f.write(str(pid))
    except OSError:
        pass


def ensure_worker(queue: JobQueue, idle_exit: float = 60.0) -> bool:
    """Start a worker process for this data folder unless one is alive; True when one was started.
    The worker is detached (its own session): the app's script reruns and page changes never touch
    it, and it exits by itself after `idle_exit` seconds without work.

    Looking and starting happen under one file lock: six guests who clicked at once each saw no worker,
    and three workers started and imported torch on the cores the demo needed (28.6 s of the workers'
    CPU against 21.4 s with one)."""
    queue.reap()
    with FileLock(str(worker_pidfile(queue.path)) + ".lock"):
        if worker_alive(queue):
            return False
        env = dict(os.environ, SYMALIGN_HOME=str(queue.path.parent))
        with open(queue.path.parent / "worker.log", "ab") as log:  # the child keeps its own handle
            process = subprocess.Popen([sys.executable, "-m", "symalign.jobs.worker", "--idle-exit", str(idle_exit)],
                                       env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        worker_pidfile(queue.path).write_text(str(process.pid))
    return True


def resume_jobs(queue: JobQueue | None = None) -> bool:
    """On app start: queued jobs left from before a restart get a worker."""
    queue = queue or JobQueue()
    return ensure_worker(queue) if queue.pending() else False
