"""The numbers behind docs/results.md, committed beside it in docs/results/records/: each computed part of the
report as CSV (cells) or JSON (curves, section numbers), written as the report computes them and read back
before anything is rendered, so the page is always rendered from the records. `results_report
--from-records` renders the page from the committed records alone (no model is run); tests/test_results_page.py
checks that the committed page is exactly that."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "results" / "records"


class MissingRecord(LookupError):
    """A part of the report has no record and the report was asked to render from records only."""


class Records:
    """Where the report's computed parts are kept. `read_only`: every part must already be recorded."""

    def __init__(self, folder: Path = FOLDER, read_only: bool = False):
        self.folder, self.read_only = Path(folder), read_only

    def _path(self, name: str, suffix: str) -> Path:
        return self.folder / f"{name.replace('/', '_').replace(' ', '_')}.{suffix}"

    def _missing(self, path: Path) -> MissingRecord:
        return MissingRecord(f"no record {path.name} in {self.folder}: run the report without --from-records to "
                             "compute it")

    def frame(self, name: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        """The part `name` as a table: read when recorded (or read-only), else computed, written and read back
        (so a page rendered right after computing is the page rendered from the records)."""
        path = self._path(name, "csv")
        if not path.is_file():
            if self.read_only:
                raise self._missing(path)
            self.folder.mkdir(parents=True, exist_ok=True)
            compute().to_csv(path, index=False)
        return pd.read_csv(path)

    def data(self, name: str, compute: Callable[[], Any]) -> Any:
        """The part `name` as JSON data (lists, dicts, numbers, strings), as `frame`."""
        path = self._path(name, "json")
        if not path.is_file():
            if self.read_only:
                raise self._missing(path)
            self.folder.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(compute(), indent=1) + "\n")  # insertion order: rows keep theirs
        return json.loads(path.read_text())


_current = Records()


def use(records: Records) -> None:
    """The records every section reads and writes from now on (the report sets them once)."""
    global _current
    _current = records


def current() -> Records:
    return _current
