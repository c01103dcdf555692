"""The app's heavy work takes the threads the machine has free (symalign.device.threads_for_load):
two busy threads on two cores fight (the guided demo beside another alignment: 124 s on 2 threads,
43 s on 1)."""

from __future__ import annotations

import os

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
