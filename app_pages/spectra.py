"""Orthogonal corrections: how far learned matching rotated weight matching's solution, per component."""

from pathlib import Path

import streamlit as st

from symalign.data.defaults import learned_defaults
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.match.matchers import matchers
from symalign.runs.durations import align_estimate, estimate_text
from symalign.runs.table import run_label
from symalign.ui.jobs import follow_job, submit_job
from symalign.ui.runs import show_spectrum
from symalign.ui.state import run_store
from symalign.ui.widgets import user_errors
from symalign.workflows.execute import spectrum_run

ORTHOGONAL = {"residual", "qk", "vo"}

st.title("Orthogonal corrections of learned matching")
st.markdown("Learned matching starts from weight matching and refines it. For every orthogonal map it learned (the "
            "residual stream, each head's QK and VO spaces) the correction C = O_learned·O_startᵀ is a rotation; its "
            "eigen-angles θ ∈ [0, π] say how far each plane was turned. Theus et al. find them near 0: learning makes "
            "*small* corrections, and permutations barely change.")


def learned_runs(store):
    """Finished learned or soft alignments that learned at least one orthogonal map and kept their files."""
    learning = {name for name, m in matchers().items() if m.learns}
    out = []
    for r in store.list():
        classes = r.metrics.get("classes") or r.settings.get("config", {}).get("classes") or {}
        if (r.kind in ("align", "align-many") and r.method in learning and r.state == "done"
                and any(classes.get(k) == "orthogonal" for k in ORTHOGONAL) and r.artifacts
                and Path(r.artifacts).is_dir()):
            out.append(r)
    return out


with user_errors():
    store = run_store()
    runs = learned_runs(store)
    if not runs:
        st.info("No learned alignment with orthogonal maps yet. Run one on Align (method learned, preset all), or "
                "here on two zoo seeds.")
        pair = ("zoo:vit-digits/0", "zoo:vit-digits/1")
        steps = int(st.number_input("learned matching steps", 10, 20_000, learned_defaults("digits")["steps"], step=50,
                                    key="spectra-steps", help="the learned matcher's optimisation steps (the "
                                    "default is the CLI's for images); the run's time grows with them"))
        when = estimate_text(align_estimate(store, "learned", *pair, steps), "about 40 s at the default")
        if st.button(f"Run learned matching on zoo:vit-digits/0 and /1 ({when})", key="spectra-quick"):
            config = AlignConfig(method="learned", classes=CLASS_PRESETS["all"], data="digits", steps=steps)
            # a background job, like every run a page starts: closing the tab does not stop it (issue #43)
            st.session_state["spectra-quick-job"] = submit_job("align", {"a": pair[0], "b": pair[1],
                                                                         "config": config.to_json()},
                                                               label=f"learned: {pair[0]} ↔ {pair[1]}")
        if "spectra-quick-job" in st.session_state:
            follow_job(st.session_state["spectra-quick-job"], "spectra-quick-done")
        st.stop()
    labels = {r.id: run_label(r) for r in runs}  # its short id and pair: the box is not cut at 1280 px
    chosen = st.selectbox("learned run", list(labels), format_func=labels.get, key="spectra-run")
    recorded = [s for s in store.list(kind="spectrum") if s.settings.get("of_run") == chosen and s.state == "done"]
    if recorded:
        result = recorded[0].metrics
    else:  # analysed once, then kept in the run history
        run = store.get(chosen)
        result = spectrum_run(run.artifacts, store=store, source="app", run=chosen)[1]
    show_spectrum(result, key="spectra-fig")
