"""Cached resources for the app. Cached models are shared across reruns and sessions, so
nothing here may be mutated: every package function returns new models (align, canonicalize
and transformed copy their inputs)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from symalign.data import load_data
from symalign.models import load_model
from symalign.models.family import TransformerModel
from symalign.runs import RunStore
from symalign.ui.shared_task import SharedTask, shared_task


def _stamp(ref: str) -> float:
    """Changes when a directory's weights change, so an edited checkpoint is reloaded."""
    if ref.startswith("zoo:"):
        return 0.0
    files = [Path(ref) / n for n in ("config.json", "model.safetensors")]
    return sum(f.stat().st_mtime for f in files if f.is_file())


@st.cache_resource(show_spinner="loading model…", max_entries=16)
def _model(ref: str, stamp: float) -> TransformerModel:
    return load_model(ref)


def cached_model(ref: str) -> TransformerModel:
    """A model the visitor may use (a guest of a shared app: only those it offers), loaded once."""
    from symalign.ui.session import check_model

    check_model(ref)
    return _model(ref, _stamp(ref))


@st.cache_resource(show_spinner="loading data…", max_entries=8)
def _data(spec: str):
    return load_data(spec)


def cached_data(spec: str):
    """Data the visitor may use (a guest: the named data sets), loaded once."""
    from symalign.ui.session import access

    access().check_data(spec)
    return _data(spec)


def run_store() -> RunStore:
    """A fresh handle each call is cheap (SQLite opens per operation) and follows SYMALIGN_HOME; the
    runs written through it belong to this browser session."""
    from symalign.ui.session import session_id

    return RunStore(owner=session_id())


@st.cache_resource(max_entries=16)
def _canonical_spec(ref: str, stamp: float):
    from symalign.models import canonicalize, spec_of

    return spec_of(canonicalize(cached_model(ref)))


def cached_canonical_spec(ref: str):
    """The spec the matchers use: that of the canonical form (which admits residual rotations)."""
    return _canonical_spec(ref, _stamp(ref))


@st.cache_data(show_spinner="timing one evaluation batch…", max_entries=32)
def _curve_estimate(ref: str, stamp: float, data_spec: str, max_examples: int | None):
    from symalign.landscape.estimate import curve_estimate

    return curve_estimate(cached_model(ref), cached_data(data_spec), max_examples)


def cached_curve_estimate(ref: str, data_spec: str, max_examples: int | None):
    """How long one point of a curve takes on this model and data (timed once per setting)."""
    return _curve_estimate(ref, _stamp(ref), data_spec, max_examples)


def planted_demo_task(ref: str, data_spec: str) -> SharedTask:
    """Part 1 of the guided demo (seeded, so every visitor gets the same numbers), computed once per
    server in a thread of its own; visitors who ask while it runs follow the same computation, each
    drawing their own progress bar from its state (`symalign.ui.widgets.follow_task`). The visitor's
    access is checked here, in their own session, before the shared computation is started or joined."""
    from symalign.demo import planted_demo
    from symalign.ui.session import heavy_slot

    model, data = cached_model(ref), cached_data(data_spec)

    def work(progress):
        with heavy_slot(lambda: progress("waiting for another visitor's computation to finish", 0, 0)):
            return planted_demo(model, data, progress=progress)

    return shared_task(("planted-demo", ref, _stamp(ref), data_spec), work)


@st.cache_data(ttl=20, show_spinner=False)
def _load(home: str):
    from symalign.runs.load import current_load

    return current_load(Path(home))


def cached_load():
    """How much slower this machine runs now than idle (a 0.1 s probe, at most every 20 s): the pages scale
    their time estimates by it (issue #70)."""
    from symalign.workspace import home

    return _load(str(home()))
