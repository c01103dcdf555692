"""Interpolation: loss and accuracy along the straight line for several runs, overlaid."""

import streamlit as st

from symalign.plots.interpolation import bands_figure, distinct_labels
from symalign.plots.names import pair_label
from symalign.runs.bands import seed_pair_groups
from symalign.runs.table import run_label, runs_table
from symalign.ui.figures import show_figure
from symalign.ui.lambda_panel import curves_at_lambda
from symalign.ui.permalink import show_permalink
from symalign.ui.runs import pick_runs_with_curves, run_filters
from symalign.ui.widgets import user_errors

st.title("Interpolation curves")
st.markdown("θ(λ) = (1 − λ)·θ_A + λ·θ_B between each run's endpoints (for an alignment run, B is the aligned "
            "model). Two barrier definitions: the loss above the **straight line between the endpoint losses** "
            "(max over λ), and the loss above the **mean endpoint loss**.")

with user_errors():
    runs = pick_runs_with_curves(run_filters("interp"), "interp-runs")
    if runs:
        c1, c2 = st.columns(2)
        bands = c1.toggle("mean ± std over seed pairs", key="interp-bands",
                          help="runs of one method and classes on pairs of one family as a mean line and a band "
                               "of one standard deviation, as a paper shows them")
        log_loss = c2.toggle("log loss axis", key="interp-log")
        if bands:
            groups = seed_pair_groups(runs)
            show_figure(bands_figure(groups, log_loss=log_loss), key="interp-bands-fig")
            st.caption(f"{len(runs)} runs in {len(groups)} groups (same method, classes, model family and λ grid); "
                       "n is the number of pairs in each.")
            st.session_state.setdefault("interp-lambda", 0.5)  # the link keeps λ while bands hide the slider
        else:
            labels = distinct_labels([run_label(r) for r in runs], [r.id for r in runs])  # one legend entry per run
            curves_at_lambda(runs, labels, "interp", "The model at λ, at work", log_loss=log_loss)
        show_permalink("interpolation", {**st.session_state["interp-filters"], "runs": ",".join(r.id for r in runs),
                                         "lambda": f"{st.session_state['interp-lambda']:g}"})
        # short columns (the legend names each run in full): the table fits a 1280-pixel page (issue #109)
        table = runs_table(runs)
        table.insert(0, "pair", [pair_label(m.split(" · ")) for m in table["models"]])
        table["id"] = table["id"].str[-6:]
        st.dataframe(table[["id", "method", "pair", "barrier", "barrier_mean", "accuracy_barrier",
                            "loss_at_half"]],
                     hide_index=True, width="stretch", column_config={
                         "barrier": st.column_config.NumberColumn("barrier (line)", format="%.4f",
                                                                  help="above the endpoint line"),
                         "barrier_mean": st.column_config.NumberColumn("barrier (mean)", format="%.4f",
                                                                       help="above the mean endpoint loss"),
                         "accuracy_barrier": st.column_config.NumberColumn("acc. barrier (pp)", format="%.2f"),
                         "loss_at_half": st.column_config.NumberColumn("loss at λ = ½", format="%.4f")})
