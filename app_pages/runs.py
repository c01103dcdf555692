"""Run history: every run from the app or the CLI; filter, re-open, delete."""

import streamlit as st

from symalign.plots import curves_figure
from symalign.runs.table import HISTORY_COLUMNS, flat_table, run_label, runs_table
from symalign.ui.figures import show_figure
from symalign.ui.permalink import show_permalink
from symalign.ui.runs import run_filters, show_simplex, show_spectrum, show_sweep, show_universe
from symalign.ui.session import access, session_id
from symalign.ui.state import run_store
from symalign.ui.widgets import every_metric_table, user_errors

st.title("Run history")
store = run_store()
st.caption(f"Stored in `{store.path}`; `symalign runs` lists the same runs.")

with user_errors():
    runs = run_filters("history")
    if not runs:
        st.info("No runs match.")
        st.stop()
    every_metric_table("history").dataframe(runs_table(runs)[HISTORY_COLUMNS], hide_index=True, width="stretch",
                 column_config={"barrier": st.column_config.NumberColumn(format="%.4f"),
                                "accuracy_barrier": st.column_config.NumberColumn("accuracy barrier (pp)",
                                                                                  format="%.2f")})
    labels = {r.id: run_label(r) + ("" if r.state == "done" else f" · {r.state}") for r in runs}  # short id inside
    linked = st.query_params.get("run")
    if linked and linked not in labels and "history-open" not in st.session_state:
        # a link to a run this history does not hold (deleted, another machine's, mistyped): say so (#56)
        st.warning(f"No run `{linked}` in this history (deleted, filtered out, or from another machine); "
                   "showing the newest run instead.")
    if linked in labels and "history-open" not in st.session_state:
        st.session_state["history-open"] = linked  # a shared link to one run
    chosen = st.selectbox("open a run", list(labels), format_func=labels.get, key="history-open")
    run = store.get(chosen)
    st.subheader(run_label(run))
    if run.tags:
        st.caption("tags: " + ", ".join(run.tags))
    show_permalink("runs", {"run": run.id})
    with st.expander("name and tags"):  # labels a user chooses, for a lecture's or an experiment's runs (#56)
        with st.form(f"history-name-{run.id}"):
            label = st.text_input("name (empty: the generated one)", run.label, key=f"history-label-{run.id}")
            tags = st.text_input("tags (comma-separated)", ", ".join(run.tags), key=f"history-tags-{run.id}")
            if st.form_submit_button("save"):
                store.rename(run.id, label)
                store.tag(run.id, tags.split(","))
                st.rerun()
    if run.error:
        st.error(run.error)
    if run.state == "interrupted":
        st.warning("This run's process ended before it finished (killed or crashed); nothing it computed was kept.")
    if run.state == "done" and run.kind == "simplex":
        show_simplex([run], key="history-simplex")
    elif run.state == "done" and run.kind == "spectrum":
        show_spectrum(run.metrics, key="history-spectrum")
    elif run.state == "done" and run.kind == "align-many":
        show_universe(run)
    elif run.state == "done" and run.kind == "sweep":
        show_sweep(run)
    elif run.curve:
        show_figure(curves_figure([(run_label(run), run.curve)], methods=[run.method]), key="history-fig")
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**settings**")
        st.dataframe(flat_table(run.settings), hide_index=True, width="stretch", key="history-settings")
    with c2:
        st.markdown("**metrics**")
        shown = {k: v for k, v in run.metrics.items() if k not in ("curve", "pairwise", "weights", "loss", "accuracy",
                                                                   "components", "cells", "summary")}
        st.dataframe(flat_table(shown), hide_index=True, width="stretch", key="history-metrics")
    if run.artifacts:
        st.caption(f"artifacts: `{run.artifacts}`")
    if not access().may_change(run.owner, session_id()):
        st.caption("This app is shared: only the visitor who started a run can delete it.")
    elif st.button("delete this run", key="history-delete"):
        store.delete(run.id)
        st.success(f"deleted run {run.id}")
        st.rerun()
