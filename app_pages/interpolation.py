"""Interpolation: loss and accuracy along the straight line for several runs, overlaid."""

import streamlit as st

from symalign.plots import curves_figure
from symalign.plots.curves import distinct_labels
from symalign.runs.table import run_label, runs_table
from symalign.ui.at_lambda import show_at_lambda
from symalign.ui.figures import show_figure
from symalign.ui.runs import pick_runs_with_curves, run_filters
from symalign.ui.widgets import user_errors

st.title("Interpolation curves")
st.markdown("θ(λ) = (1 − λ)·θ_A + λ·θ_B between each run's endpoints (for an alignment run, B is the aligned "
            "model). Two barrier definitions: the loss above the **straight line between the endpoint losses** "
            "(max over λ), and the loss above the **mean endpoint loss**.")

with user_errors():
    runs = pick_runs_with_curves(run_filters("interp"), "interp-runs")
    if runs:
        labels = distinct_labels([run_label(r) for r in runs], [r.id for r in runs])  # one legend entry per run
        lam = st.slider("λ: move along the path", 0.0, 1.0, 0.5, 0.05, key="interp-lambda",
                        help="the marker on every curve, and the model at this λ below")
        figure = curves_figure(list(zip(labels, [r.curve for r in runs])), methods=[r.method for r in runs])
        figure.add_vline(x=lam, line=dict(color="#444", width=2, dash="dash"), row="all", col="all")
        show_figure(figure, key="interp-fig")
        with st.expander("The model at λ, at work", expanded=True):
            show_at_lambda(runs, lam, key="interp-at")
        table = runs_table(runs)[["run", "model_a", "model_b", "barrier", "barrier_mean", "accuracy_barrier",
                                  "loss_at_half", "endpoint_loss_a", "endpoint_loss_b"]]
        st.dataframe(table.rename(columns={"barrier": "barrier (above endpoint line)",
                                           "barrier_mean": "barrier (above mean endpoint loss)",
                                           "accuracy_barrier": "accuracy barrier (pp)",
                                           "loss_at_half": "loss at λ = 0.5"}),
                     hide_index=True, width="stretch")
