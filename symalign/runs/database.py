"""The data folder's SQLite file, shared by the run history and the job queue: where it is, one
transaction on it (WAL, rows by name, a database error as one line), and a table created or brought up
to date in place (columns added after the first release), so neither store repeats that code."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from symalign.errors import SymalignError


def pid_alive(pid: int | None) -> bool:
    """Whether a process still runs (a zombie does not)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped by its parent) is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return True


def database_path(path: str | Path | None = None) -> Path:
    """The run database's file (the data folder's runs.sqlite by default), its folder created."""
    if path is None:
        from symalign.workspace import home

        path = home() / "runs.sqlite"
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SymalignError(f"cannot create {path.parent} for the run database ({exc.strerror})") from None
    return path


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """One transaction on the run database (WAL, rows by name): committed whole or not at all; a
    database error becomes one line. Shared by the run history and the job queue."""
    try:
        db = sqlite3.connect(path, timeout=30)
    except sqlite3.Error as exc:
        raise SymalignError(f"cannot open the run database {path} ({exc})") from None
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.row_factory = sqlite3.Row
        with db:
            yield db
    except sqlite3.DatabaseError as exc:
        raise SymalignError(f"the run database {path} cannot be used ({exc})") from None
    finally:
        db.close()


def ensure_table(path: Path, schema: str, table: str, migrations: dict[str, str]) -> None:
    """Create `schema`'s tables when missing, then add each column of `migrations` (column -> ALTER
    statement) that `table` lacks: a database written by an older symalign is upgraded in place."""
    with connect(path) as db:
        db.executescript(schema)
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for column, statement in migrations.items():
            if column not in present:
                db.execute(statement)
