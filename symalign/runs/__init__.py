"""Run history: every alignment and barrier run, from the CLI or the app, in one SQLite file."""

from symalign.runs.store import Run, RunStore

__all__ = ["Run", "RunStore"]
