"""Progress reporting: the package's long work reports (done, total); a workflow made of several
steps reports (phase, done, total), which the app turns into one labelled bar and the CLI into tqdm."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]  # done, total
PhaseProgress = Callable[[str, int, int], None]  # phase, done, total


def phase(progress: PhaseProgress | None, name: str) -> Callable[..., None] | None:
    """A (done, total, ...) callback that reports to `progress` under one phase's name. A text note
    (e.g. weight matching's "sweep 3, improvement 2e-4 (stops below 1e-05)") is passed on as a fourth
    argument; other extras (a loss) are dropped."""
    if progress is None:
        return None

    def report(done: int, total: int, *extra) -> None:
        notes = [e for e in extra if isinstance(e, str)]
        progress(name, done, total, *notes[:1])

    return report
