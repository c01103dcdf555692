"""A SQLite run database that survives restarts and killed processes.

Why SQLite: one file, transactional writes (a process killed mid-run leaves every committed
row intact), readable from the CLI and the app at once (WAL journal). A run is written when it
starts (status `running`, with the writer's pid) and updated when it ends, so a run whose
process died is seen as `interrupted` instead of vanishing."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from symalign.errors import SymalignError
from symalign.runs.database import connect, database_path, ensure_table, pid_alive

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,            -- align | barrier | align-many | simplex | spectrum | sweep
    status TEXT NOT NULL,          -- running | done | failed
    source TEXT NOT NULL,          -- cli | app | api
    created REAL NOT NULL,
    finished REAL,
    pid INTEGER,
    label TEXT NOT NULL DEFAULT '',
    model_a TEXT NOT NULL,
    model_b TEXT NOT NULL,
    models TEXT NOT NULL DEFAULT '[]',  -- every model of the run (three or more for simplex, align-many)
    method TEXT NOT NULL DEFAULT '',
    settings TEXT NOT NULL DEFAULT '{}',
    metrics TEXT NOT NULL DEFAULT '{}',
    artifacts TEXT,
    error TEXT,
    owner TEXT NOT NULL DEFAULT '',  -- the app session that started it ('' for the CLI, the API and the host)
    tags TEXT NOT NULL DEFAULT '[]'  -- a user's words for the run (a lecture, an experiment), set after the fact
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created);
-- requests answered once: the key of a request (models' contents, settings, seed) -> the runs it recorded
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    runs TEXT NOT NULL,
    created REAL NOT NULL
);
"""
# Columns added after the first release: a database written by an older symalign gets them in place.
MIGRATIONS = {"models": "ALTER TABLE runs ADD COLUMN models TEXT NOT NULL DEFAULT '[]'",
              "owner": "ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
              "tags": "ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'"}


@dataclass
class Run:
    id: str
    kind: str
    status: str
    source: str
    created: float
    model_a: str
    model_b: str
    models: list[str] = field(default_factory=list)
    method: str = ""
    label: str = ""
    settings: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    artifacts: str | None = None
    error: str | None = None
    finished: float | None = None
    pid: int | None = None
    owner: str = ""
    tags: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        """`interrupted` for a run still marked running whose process is gone."""
        if self.status == "running" and not pid_alive(self.pid):
            return "interrupted"
        return self.status

    @property
    def typed_settings(self):
        """The settings as the run kind's class (symalign.runs.settings)."""
        from symalign.runs.settings import settings_of

        return settings_of(self.kind, self.settings)

    @property
    def curve(self) -> dict | None:
        """The interpolation curve, when the run measured one."""
        return self.metrics.get("curve")

    @property
    def all_models(self) -> list[str]:
        """Every model of the run (older rows recorded only two)."""
        return self.models or [self.model_a, self.model_b]

    @property
    def title(self) -> str:
        return self.label or f"{self.kind} {self.method} {' ↔ '.join(self.all_models)}".replace("  ", " ")


class RunStore:
    """All runs under one data folder (see `symalign.workspace.home`). `owner` names who starts the
    runs written through this handle (an app session; '' for the host), so a shared app can let a
    guest delete only their own."""

    def __init__(self, path: str | Path | None = None, owner: str = ""):
        self.path = database_path(path)
        self.owner = owner
        ensure_table(self.path, SCHEMA, "runs", MIGRATIONS)

    def _connect(self):
        return connect(self.path)

    def start(self, kind: str, model_a: str, model_b: str, method: str = "", settings: dict | None = None,
              source: str = "api", label: str = "", models: list[str] | None = None) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._connect() as db:
            db.execute("INSERT INTO runs (id, kind, status, source, created, pid, label, model_a, model_b, models, "
                       "method, settings, owner) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (run_id, kind, source, time.time(), os.getpid(), label, model_a, model_b,
                        json.dumps(models or [model_a, model_b]), method, json.dumps(settings or {}), self.owner))
        return run_id

    def finish(self, run_id: str, metrics: dict, artifacts: str | Path | None = None) -> None:
        from symalign.runs.load import RUN_LOAD

        if RUN_LOAD.get() is not None and "load_factor" not in metrics:  # how busy the machine was (a job's)
            metrics = {**metrics, "load_factor": RUN_LOAD.get()}
        with self._connect() as db:
            db.execute("UPDATE runs SET status='done', finished=?, metrics=?, artifacts=? WHERE id=?",
                       (time.time(), json.dumps(metrics), str(artifacts) if artifacts else None, run_id))

    def fail(self, run_id: str, message: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET status='failed', finished=?, error=? WHERE id=?",
                       (time.time(), message, run_id))

    def get(self, run_id: str) -> Run:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise SymalignError(f"no run {run_id!r} in {self.path}")
        return self._run(row)

    def list(self, kind: str | None = None, method: str | None = None, model: str | None = None,
             state: str | None = None) -> list[Run]:
        """Newest first; filters combine (model matches either endpoint, as a substring)."""
        query, args = "SELECT * FROM runs WHERE 1=1", []
        if kind:
            query, args = query + " AND kind=?", args + [kind]
        if method:
            query, args = query + " AND method=?", args + [method]
        if model:
            query, args = query + " AND (instr(models, ?) > 0 OR instr(model_a, ?) > 0 OR instr(model_b, ?) > 0)", \
                args + [model, model, model]
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY created DESC", args).fetchall()
        runs = [self._run(r) for r in rows]
        return [r for r in runs if r.state == state] if state else runs

    def rename(self, run_id: str, label: str) -> None:
        """Give a run a name of the user's (shown instead of the generated one; '' goes back to it)."""
        self.get(run_id)  # the clear error for an unknown id
        with self._connect() as db:
            db.execute("UPDATE runs SET label=? WHERE id=?", (label.strip(), run_id))

    def tag(self, run_id: str, tags: list[str]) -> None:
        """Set a run's tags (words; duplicates and blanks dropped, order kept)."""
        self.get(run_id)
        clean = list(dict.fromkeys(t.strip() for t in tags if t.strip()))
        with self._connect() as db:
            db.execute("UPDATE runs SET tags=? WHERE id=?", (json.dumps(clean), run_id))

    def delete(self, run_id: str) -> None:
        """Forget a run; its artifacts go too when the app made them (inside the data folder)."""
        run = self.get(run_id)
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE id=?", (run_id,))
        if run.artifacts and run.settings.get("owns_artifacts"):
            shutil.rmtree(run.artifacts, ignore_errors=True)

    def remember(self, key: str, run_ids: list[str]) -> None:
        """The runs that answered the request `key` (symalign.runs.reuse)."""
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO answers (key, runs, created) VALUES (?, ?, ?)",
                       (key, json.dumps(run_ids), time.time()))

    def recall(self, key: str) -> list[str] | None:
        """The runs that answered `key`, while every one of them is still here and done; else None."""
        with self._connect() as db:
            row = db.execute("SELECT runs FROM answers WHERE key=?", (key,)).fetchone()
            if row is None:
                return None
            ids = json.loads(row["runs"])
            marks = ", ".join("?" * len(ids))
            done = db.execute(f"SELECT COUNT(*) FROM runs WHERE status='done' AND id IN ({marks})", ids).fetchone()[0]
        return ids if ids and done == len(set(ids)) else None

    def check(self) -> str:
        """SQLite's own integrity check ('ok' when the file is sound)."""
        with self._connect() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]

    @staticmethod
    def _run(row: sqlite3.Row) -> Run:
        d = dict(row)
        d["settings"], d["metrics"] = json.loads(d["settings"]), json.loads(d["metrics"])
        d["models"] = json.loads(d.get("models") or "[]")
        d["tags"] = json.loads(d.get("tags") or "[]")
        return Run(**d)
