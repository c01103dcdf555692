"""How busy this machine is right now, as a factor on the pages' time estimates (issue #70: "about 10 s"
took 265 s, and "about 12 s" 7.5 minutes, on a 2-core machine with a load average of 7).

A short probe (about 0.1 s): a fixed torch workload at the threads a job would use, timed now and divided by the fastest
the same probe has run on this machine (kept in the data folder, so the reference is this machine's idle
speed once it has been seen idle). The load average says the same thing less directly and is reported
beside it. Measured against actual runs by `benchmarks/estimates.py --beside`."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

PROBE_FILE = "probe.json"
SIZE, REPEATS, TIMINGS = 160, 24, 7  # about 15 ms a timing on 2 idle cores; the median of 7 (about 0.1 s)


@dataclass(frozen=True)
class Load:
    factor: float  # now ÷ idle (≥ 1)
    load_average: float | None  # the 1-minute load average
    seconds: float  # the probe now
    reference: float  # the fastest probe seen here

    @property
    def busy(self) -> bool:
        return self.factor >= 1.3


def probe_seconds() -> float:
    """The median of several timings of a fixed matrix workload, at torch's current threads. Not the best:
    beside a busy neighbour the best of three caught an idle time slice and said 1.00× (measured, 2 cores)."""
    import statistics

    import torch

    x = torch.randn(SIZE, SIZE, generator=torch.Generator().manual_seed(0))
    timings = []
    for _ in range(TIMINGS):
        began = time.perf_counter()
        y = x
        for _ in range(REPEATS):
            y = torch.tanh(y @ x)
        timings.append(time.perf_counter() - began)
    return statistics.median(timings)


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def current_load(folder: Path | None = None) -> Load:
    """The probe now against this machine's fastest (updated when now is faster)."""
    from symalign.device import polite_threads
    from symalign.workspace import home

    path = (folder or home()) / PROBE_FILE
    with polite_threads():  # at the threads a job gets now (symalign.jobs.kinds.run_kind), against the idle best
        now = probe_seconds()
    try:
        reference = float(json.loads(path.read_text())["fastest"])
    except (OSError, ValueError, KeyError):
        reference = now
    if now < reference or not path.is_file():
        reference = min(now, reference)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"fastest": reference, "when": time.time()}))
        except OSError:
            pass  # a read-only data folder: the estimate still works for this call
    return Load(max(1.0, now / reference), _load_average(), now, reference)


# The load factor the work in progress runs under (set by the job worker), written into each run's metrics as it
# finishes: a duration from history is then divided by it, so a run timed on a busy machine is not scaled by the
# load a second time when a page quotes it (issue #70: "last time here" estimates came out 2.2x long).
RUN_LOAD: ContextVar[float | None] = ContextVar("symalign_run_load", default=None)


@contextmanager
def measured_load(folder: Path | None = None) -> Iterator[float]:
    """Probe the load once (about 0.1 s) and let every run finished inside record it."""
    factor = current_load(folder).factor
    token = RUN_LOAD.set(factor)
    try:
        yield factor
    finally:
        RUN_LOAD.reset(token)


def idle_seconds(seconds: float, metrics: dict) -> float:
    """A recorded duration as it would have been idle: divided by the load factor its run recorded."""
    return seconds / max(1.0, float(metrics.get("load_factor") or 1.0))
