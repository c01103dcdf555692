"""Shared fixtures: tiny random models of every family (every parameter random)."""

from __future__ import annotations

import os
import random

import pytest
import torch

from symalign.models.io import FAMILIES
from symalign.models.tiny import random_model, tiny_config, tiny_families

# Two CPU threads, as the README's numbers were measured; under pytest-xdist (the README's test
# command runs two workers on two cores) one thread per worker, so the workers do not fight over cores.
THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
torch.set_num_threads(THREADS)
if THREADS == 1:  # and so do the processes the tests start (the CLI, the app, job workers)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def random_configs(family: str, n: int, seed: int) -> list:
    """Varied small configs of the family (its adapter's `test_configs`: layers, heads, widths, ties,
    activations, biases, grouped queries, whatever the family can vary)."""
    return FAMILIES[family].test_configs(random.Random(seed), n)


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


# Modules by their measured wall on 2 cores, longest first (benchmarks/suite_timeline.py on a full run, 2026-12-02):
# with `--no-loadscope-reorder` (pyproject's addopts) pytest-xdist hands out modules in the collection's order, so
# these start first and the many short modules fill the end. Its default hands them out by number of tests, most
# first, which left the one-test browser modules (the demo, the six guests) for last and a worker idle for 11-93 s
# at the end of full runs. A module missing here keeps that default's place, after these.
LONGEST_FIRST = ("test_browser_links", "test_browser", "test_zoo_simplex", "test_zoo_ordering", "test_app",
                 "test_sweep", "test_jobs", "test_browser_guests", "test_learned", "test_browser_layout",
                 "test_browser_papers", "test_heldout", "test_function_preservation", "test_barrier")


def pytest_collection_modifyitems(config, items) -> None:
    from collections import Counter

    def module(item) -> str:
        return item.nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")

    counts = Counter(module(item) for item in items)

    def rank(item) -> tuple:
        name = module(item)
        return (LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST), -counts[name], name)

    items.sort(key=rank)  # stable: each module's own order is kept


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
