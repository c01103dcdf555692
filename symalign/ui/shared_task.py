"""A computation shared by every visitor of the server: run once, in its own thread, while each
visitor's page polls its progress and draws its own bar.

Why not `st.cache_data` with a progress callback (issue #70): an element call made inside a cached
function is recorded and replayed for every visitor who waits on the same key, into a block that
exists only on the first visitor's page (CacheReplayClosureError on 3-5 of 6 concurrent guests).
Here the computation never touches Streamlit: its progress is plain state behind a lock, and only
the page that reads it draws. Plain Python, so it is tested without a server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from symalign.progress import PhaseProgress


@dataclass
class Snapshot:
    """What a page draws: the phase, its (done, total), an optional note, and the phase's start."""

    phase: str
    done: int
    total: int
    note: str | None
    phase_began: float


@dataclass
class SharedTask:
    """One computation, started once; `report` is its PhaseProgress; `wait` blocks a reader briefly."""

    _state: Snapshot = field(default_factory=lambda: Snapshot("waiting to start", 0, 0, None, time.monotonic()))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _finished: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None

    def report(self, phase: str, done: int, total: int, note: str | None = None) -> None:
        with self._lock:
            began = self._state.phase_began if phase == self._state.phase else time.monotonic()
            self._state = Snapshot(phase, done, total, note, began)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._state

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def wait(self, seconds: float) -> bool:
        """Whether the computation has ended (with a result or an error), waiting at most `seconds`."""
        return self._finished.wait(seconds)

    def outcome(self) -> Any:
        """The result; the computation's own exception if it failed (so the page says it as usual)."""
        if self.error is not None:
            raise self.error
        return self.result

    def _run(self, work: Callable[[PhaseProgress], Any]) -> None:
        try:
            self.result = work(self.report)
        except BaseException as exc:  # handed to every reader; the thread itself ends quietly
            self.error = exc
        finally:
            self._finished.set()


_TASKS: dict[Hashable, SharedTask] = {}
_TASKS_LOCK = threading.Lock()
MAX_TASKS = 16  # finished results kept per server (the demo has one key per recipe)


def shared_task(key: Hashable, work: Callable[[PhaseProgress], Any]) -> SharedTask:
    """The task for `key`: the one already running or finished, else `work(progress)` started in a
    daemon thread. A task that failed is started afresh by the next request (a transient error, e.g. a
    model file being rewritten, must not stick for the server's lifetime)."""
    with _TASKS_LOCK:
        task = _TASKS.get(key)
        if task is not None and not (task.finished and task.error is not None):
            return task
        if len(_TASKS) >= MAX_TASKS:  # forget the oldest finished one
            old = next((k for k, t in _TASKS.items() if t.finished), None)
            if old is not None:
                del _TASKS[old]
        task = _TASKS[key] = SharedTask()
    threading.Thread(target=task._run, args=(work,), name=f"symalign-shared-{key}", daemon=True).start()
    return task
