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
