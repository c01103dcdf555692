"""The app's heavy work takes the threads the machine has free (symalign.device.threads_for_load):
two busy threads on two cores fight (the guided demo beside another alignment: 124 s on 2 threads,
43 s on 1)."""

from __future__ import annotations

import os

import pytest
import torch

from symalign.device import polite_threads, threads_for_load


def test_threads_follow_the_load(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.2, 0.1))
    assert threads_for_load(2) == 2  # idle: every core
    monkeypatch.setattr(os, "getloadavg", lambda: (1.1, 0.5, 0.2))
    assert threads_for_load(2) == 1 and threads_for_load(16) == 15
    monkeypatch.setattr(os, "getloadavg", lambda: (7.0, 5.0, 3.0))
    assert threads_for_load(2) == 1  # never below one


def test_polite_threads_restores_the_count(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    before = torch.get_num_threads()
    with polite_threads() as threads:
        assert threads == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before


def test_every_job_and_the_load_probe_run_on_the_threads_the_load_leaves(monkeypatch, tmp_path):
    """Issue #70: a job beside a 2-thread neighbour on every core ran 5-15x slower while the probe said 1-3.4x.
    Every kind now runs on polite threads (run_kind, what the worker calls), and the probe measures at the same
    count, so the page's factor is the job's slowdown."""
    from symalign.jobs import kinds
    from symalign.runs import load

    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # a busy machine: one thread left
    seen = {}
    monkeypatch.setitem(kinds.JOB_KINDS, "probe-kind", lambda request, store, progress: [
        seen.setdefault("job", torch.get_num_threads())])
    before = torch.get_num_threads()
    assert kinds.run_kind("probe-kind", {}, None, None) == [1] and seen["job"] == 1
    assert torch.get_num_threads() == before  # restored for whatever the process does next
    monkeypatch.setattr(load, "probe_seconds", lambda: seen.setdefault("probe", torch.get_num_threads()) * 0.01)
    load.current_load(tmp_path)
    assert seen["probe"] == 1


def test_a_run_finished_inside_a_job_keeps_its_load_so_history_is_not_scaled_twice(monkeypatch, tmp_path):
    """Issue #70: "last time here" beside a busy neighbour came out 2.2x long, the run it remembered having
    already run slow. A job's runs record the load factor; history is divided by it before today's applies."""
    from symalign.runs import durations, load
    from symalign.runs.store import RunStore

    store = RunStore(tmp_path / "runs.sqlite")
    monkeypatch.setattr(load, "current_load", lambda folder=None: load.Load(3.0, 6.0, 0.03, 0.01))
    with load.measured_load():
        busy = store.start("barrier", "a", "b", "none", {}, "app", "", None)
        store.finish(busy, {"barrier": 1.0})
    idle = store.start("barrier", "a", "b", "none", {}, "app", "", None)
    store.finish(idle, {"barrier": 1.0})
    assert store.get(busy).metrics["load_factor"] == 3.0 and "load_factor" not in store.get(idle).metrics
    run = store.get(busy)
    assert durations.took(run) == pytest.approx((run.finished - run.created) / 3.0)
    assert durations.took(store.get(idle)) == pytest.approx(store.get(idle).finished - store.get(idle).created)
