"""Compare matchers: runs side by side, as a table, a bar chart and a CSV download."""

import streamlit as st

from symalign.plots import barrier_bars
from symalign.plots.names import pair_label
from symalign.runs.table import curves_table, headline_barrier, latest_per_method, run_label, runs_table
from symalign.ui.figures import show_figure
from symalign.ui.permalink import initial_list, show_permalink
from symalign.ui.runs import run_filters
from symalign.ui.widgets import every_metric_table, user_errors

st.title("Compare matchers")

with user_errors():
    runs = [r for r in run_filters("compare") if r.state == "done" and headline_barrier(r) is not None]
    if not runs:
        st.info("No finished runs with a barrier yet: run the guided demo on Home or align two models.")
        st.stop()
    labels = {r.id: run_label(r) for r in runs}  # unique (the short id) and naming the pair
    linked = initial_list("compare-runs", "runs", list(labels))
    chosen = st.multiselect("runs to compare", list(labels), key="compare-runs", format_func=labels.get,
                            default=linked or [r.id for r in latest_per_method(runs)])
    if not linked and len(chosen) < len(labels):
        st.caption(f"{len(chosen)} of {len(labels)} finished runs chosen: the newest of each method on the newest "
                   "pair. Add any from the box.")
    runs = [r for r in runs if r.id in chosen]
    if not runs:
        st.info("Pick at least one run.")
        st.stop()
    curves = [r for r in runs if r.kind == "curve"]  # fitted curves: beside, never among, the matchers (issue #70)
    runs = [r for r in runs if r.kind != "curve"]
    table = runs_table(runs)
    table.insert(1, "pair", [pair_label(m.split(" · ")) for m in table["models"]])
    table = table.sort_values(["pair", "method"], kind="stable")  # grouped by model pair, as the chart
    pairs = sorted(set(table["models"]))
    st.caption(f"{len(table)} runs over {len(pairs)} model pairs or triples. Lower is better; 0 means linearly "
               "connected. For a simplex run the barrier is the largest loss above the plane through its corner "
               "losses (and `near_zero_fraction` the share within ε of it); for a universe alignment, the largest "
               "pairwise barrier.")
    first = ["pair", "method", "classes", "barrier", "accuracy_barrier", "barrier_mean"]  # the key columns first
    shown = table[first + [c for c in table.columns if c not in first and c not in ("id", "models")]]
    every_metric_table("compare").dataframe(shown, hide_index=True, width="stretch",
                 column_config={"barrier": st.column_config.NumberColumn(format="%.4f"),
                                "barrier_mean": st.column_config.NumberColumn(format="%.4f"),
                                "accuracy_barrier": st.column_config.NumberColumn("accuracy barrier (pp)",
                                                                                  format="%.2f"),
                                "near_zero_fraction": st.column_config.NumberColumn(format="%.2f"),
                                "seconds": st.column_config.NumberColumn(format="%.1f")})
    if len(table):
        show_figure(barrier_bars(table), key="compare-fig")
    if curves:
        st.subheader("Fitted curves (not straight lines)")
        st.caption("A curve fitted between two models (on the 'Beyond the straight line' page) bends around "
                   "the barrier; its barrier is the curve's, not a matcher's. Each row also gives the straight "
                   "lines it started from.")
        st.dataframe(curves_table(curves), hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f")
                                    for c in ("curve barrier", "straight line barrier", "aligned line barrier")})
    st.download_button("download CSV", table.to_csv(index=False).encode(), "symalign-runs.csv", "text/csv",
                       key="compare-csv")
    show_permalink("compare", {**st.session_state["compare-filters"], "runs": ",".join(chosen)})
