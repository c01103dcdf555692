"""Shared fixtures: tiny random models of every family (every parameter random)."""

from __future__ import annotations

import os

import pytest
import torch
from family_configs import random_configs  # noqa: F401 (the tests over every family import it from here)

from symalign.models.io import FAMILIES
from symalign.models.tiny import random_model, tiny_config, tiny_families

# Two CPU threads, as the README's numbers were measured; under pytest-xdist (the README's test
# command runs two workers on two cores) one thread per worker, so the workers do not fight over cores.
THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
torch.set_num_threads(THREADS)
if THREADS == 1:  # and so do the processes the tests start (the CLI, the app, job workers)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# Pre-LN LayerNorm families (GPT-2, ViT): the tests of the all-ones condition and of widening with its
# LayerNorm correction are about them; every other shared test runs on every family.
LAYERNORM_FAMILIES = [f for f in tiny_families() if FAMILIES[f].dims(tiny_config(f)).norm == "layernorm"]
# Pre-norm families whose canonical form folds the norms: their raw form is not canonical. Post-LN BERT's and
# Gemma 2's (sandwich norms: nothing to fold) are.
PRE_NORM_FAMILIES = [f for f in tiny_families() if FAMILIES[f].dims(tiny_config(f)).folds_norms]


@pytest.fixture(params=tiny_families())  # every family that can build small models
def family(request) -> str:
    return request.param


@pytest.fixture
def model(family):
    return random_model(tiny_config(family, activation="relu", tied=False), seed=7)


@pytest.fixture(autouse=True, scope="session")
def isolated_home(tmp_path_factory):
    """Every test (and every CLI subprocess it starts) records runs in a throw-away data folder."""
    home = tmp_path_factory.mktemp("symalign-home")
    previous = os.environ.get("SYMALIGN_HOME")
    os.environ["SYMALIGN_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("SYMALIGN_HOME", None)
    else:
        os.environ["SYMALIGN_HOME"] = previous


# No module order is set here: with `--dist loadscope`, pytest-xdist (3.5 and later) hands out modules by their
# number of tests, most first, whatever the collection order. A LONGEST_FIRST list sorted the collection until
# 2026-12-02 and changed nothing. Measured with SYMALIGN_TEST_TIMELINE (below), three full runs on 2 cores left
# one worker idle for 17-39 s at the end. With `--no-loadscope-reorder` (pytest-xdist 3.8) such a list does take
# effect, and it was slower (2026-12-02 afternoon, 2-core AMD EPYC): the long browser and zoo modules, run side by side
# at the start, took 3,324 s of test wall against 2,968 s beside short modules the run before; pytest 2,376 s
# against 2,243 s, and a worker still idle 67 s at the end (docs/benchmarks.md).


# SYMALIGN_TEST_TIMELINE=FILE appends one line per test from every worker: worker, start, end (seconds since the
# epoch), CPU seconds (the worker's and its waited-for children's: the app servers, the CLI runs; not a job worker,
# which outlives its test) and the test's id. Where each worker's time went, and what a test costs the other worker
# when the cores are saturated (benchmarks/suite_timeline.py).
TIMELINE = os.environ.get("SYMALIGN_TEST_TIMELINE")


def cpu_seconds() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not TIMELINE:
        return (yield)
    import time

    start, cpu = time.time(), cpu_seconds()
    try:
        return (yield)
    finally:
        with open(TIMELINE, "a") as log:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            log.write(f"{worker}\t{start:.3f}\t{time.time():.3f}\t{cpu_seconds() - cpu:.2f}\t{item.nodeid}\n")
