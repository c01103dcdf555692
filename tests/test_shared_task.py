"""The shared computation behind the guided demo's part 1 (symalign.ui.shared_task): started once for
any number of concurrent askers, its progress readable while it runs, a failure handed to every reader
and retried by the next request."""

from __future__ import annotations

import threading

import pytest

from symalign.ui.shared_task import shared_task


def test_concurrent_askers_share_one_computation_and_see_its_progress():
    calls, gate = [], threading.Event()

    def work(progress):
        calls.append(1)
        progress("phase one", 1, 4)
        gate.wait(10)
        progress("phase two", 4, 4, "a note")
        return sum(range(10))

    tasks = []
    askers = [threading.Thread(target=lambda: tasks.append(shared_task(("test-share",), work))) for _ in range(6)]
    for t in askers:
        t.start()
    for t in askers:
        t.join()
    assert len({id(t) for t in tasks}) == 1
    task = tasks[0]
    assert not task.wait(0.2)
    now = task.snapshot()
    assert (now.phase, now.done, now.total) == ("phase one", 1, 4)
    gate.set()
    assert task.wait(10) and task.outcome() == 45 and len(calls) == 1
    assert task.snapshot().note == "a note"
    assert shared_task(("test-share",), work) is task and len(calls) == 1  # finished: answered, not recomputed


def test_a_failure_reaches_every_reader_and_the_next_request_starts_afresh():
    attempts = []

    def work(progress):
        attempts.append(1)
        if len(attempts) == 1:
            raise ValueError("the first try fails")
        return "ok"

    first = shared_task(("test-fail",), work)
    assert first.wait(10)
    with pytest.raises(ValueError, match="first try"):
        first.outcome()
    second = shared_task(("test-fail",), work)
    assert second is not first and second.wait(10) and second.outcome() == "ok"
