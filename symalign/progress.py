"""Progress reporting: the package's long work reports (done, total); a workflow made of several
steps reports (phase, done, total), which the app turns into one labelled bar and the CLI into tqdm."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]  # done, total
PhaseProgress = Callable[[str, int, int], None]  # phase, done, total


def phase(progress: PhaseProgress | None, name: str) -> Callable[..., None] | None:
    """A (done, total, ...) callback that reports to `progress` under one phase's name (extra
    arguments some callers pass, e.g. a loss, are dropped)."""
    return None if progress is None else (lambda done, total, *_: progress(name, done, total))
