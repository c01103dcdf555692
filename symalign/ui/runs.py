"""Run selection shared by the Interpolation, Compare and Run history pages."""

from __future__ import annotations

import streamlit as st

from symalign.runs.store import Run
from symalign.runs.table import run_label
from symalign.ui.state import run_store


def run_filters(key: str) -> list[Run]:
    """Filter widgets (model, method, state) over the whole history; newest first."""
    runs = run_store().list()
    c1, c2, c3 = st.columns(3)
    model = c1.text_input("model contains", key=f"{key}-model")
    methods = sorted({r.method for r in runs})
    method = c2.selectbox("method", ["any"] + methods, key=f"{key}-method")
    state = c3.selectbox("state", ["any", "done", "running", "failed", "interrupted"], key=f"{key}-state")
    return [r for r in runs
            if (not model or model in r.model_a or model in r.model_b)
            and (method == "any" or r.method == method) and (state == "any" or r.state == state)]


def pick_runs_with_curves(runs: list[Run], key: str, default: int = 3) -> list[Run]:
    with_curves = [r for r in runs if r.state == "done" and r.curve]
    if not with_curves:
        st.info("No finished runs with an interpolation curve yet: run the guided demo on Home, align two "
                "models on Align, or run `symalign barrier A B` / `symalign align ... --barrier`.")
        return []
    labels = {r.id: f"{run_label(r)} · {r.model_a} ↔ {r.model_b}" for r in with_curves}
    chosen = st.multiselect("runs", list(labels), default=list(labels)[:default], key=key,
                            format_func=labels.get)
    return [r for r in with_curves if r.id in chosen]
