"""Home: what linear mode connectivity and parameter symmetries are, and a one-click guided demo."""

import streamlit as st

from symalign.data import learned_defaults
from symalign.runs.durations import demo_estimate, demo_typical  # the run database only: no torch on the first paint
from symalign.runs.store import RunStore
from symalign.train.recipes import DEMO_DATA
from symalign.ui.figures import show_figure
from symalign.ui.widgets import user_errors

# Home is the first page a visitor sees: torch, plotly and pandas load only once the demo runs or
# its results are shown (benchmarks/first_paint.py).

st.title("symalign")
st.markdown(
    """
**Are two trained transformers connected by a low-loss straight line once their parameter
symmetries are factored out?**

*Linear mode connectivity*: walk from model A's weights to model B's in a straight line,
θ(λ) = (1 − λ)·θ_A + λ·θ_B, and measure the loss on the way. If it stays low, A and B sit in one
basin; the **barrier** is how far the loss rises above the line between the endpoint losses.

*Parameter symmetries*: many different weights compute the same function. Permute a layer's
MLP units, reorder attention heads, rotate the query/key space inside a head, or rotate the
whole residual stream (in canonical form): the network's outputs do not change, but the
straight line to another model does. symalign finds the symmetry that brings B into A's basis
(weight, activation, learned or soft matching) and measures the barrier again.
"""
)

st.header("Guided demo")
left, right = st.columns([2, 1])
recipe = left.selectbox("zoo recipe", list(DEMO_DATA), key="demo-recipe",
                        help="vit-digits: ViT on 8×8 digits; gpt-shakespeare: character GPT-2 on the plays")
steps = right.number_input("learned matching steps", 10, 20_000, learned_defaults(DEMO_DATA[recipe])["steps"], step=50,
                           key=f"demo-steps-{recipe}",
                           help="the learned matcher's optimisation steps; the default is the CLI's for this data "
                                "(600 for images, 300 for text); the demo's time grows with them")

_before = demo_estimate(RunStore(), recipe, int(steps))
if not _before:  # never run here: the typical figure, said to be one, a warning when it is minutes (issue #56)
    _typical_seconds, _typical = demo_typical(recipe, int(steps))
    (st.warning if _typical_seconds >= 90 else st.caption)(
        f"The demo's second part takes {_typical} on 2 CPU cores (typical; not yet run here); the first part "
        "takes a few seconds.")
if _before:
    st.caption(f"On this machine the demo's second part took about {sum(_before.values()):.0f} s last time ("
               + ", ".join(f"{label.removeprefix('demo: ')} {seconds:.0f} s" for label, seconds in _before.items())
               + f", the learned part at {int(steps)} steps); the first part takes a few seconds. Asked again with "
               "the same settings, it is shown from the run history at once.")

if st.button("Run the guided demo", type="primary", key="demo-run"):
    from symalign.ui.jobs import submit_or_join
    from symalign.ui.state import planted_demo_task
    from symalign.ui.widgets import follow_task, scroll_into_view

    scroll_into_view("demo")  # the demo's progress and first results where the room can see them
    with user_errors():
        # part 2 is a background job, so it goes on if this tab closes or reloads (the page picks it up
        # again); an identical demo already under way is joined, and parts asked before are reused
        request = {"recipe": recipe, "data": DEMO_DATA[recipe], "steps": int(steps)}
        st.session_state["demo-job"] = submit_or_join("demo", request, label=f"guided demo: {recipe}")
        st.session_state.pop("demo-runs", None)
        # part 1 is computed once per server in a thread of its own; each visitor draws its progress
        # (no Streamlit call inside a shared computation: issue #70's concurrent guests)
        with st.status("1 · planting a symmetry in one model and undoing it…", expanded=True) as status:
            task = planted_demo_task(f"zoo:{recipe}/0", DEMO_DATA[recipe])
            st.session_state["demo-planted"] = (recipe, follow_task(task, "1 · starting…"))
            status.update(label="1 · planted symmetry: done", state="complete", expanded=False)

if "demo-job" not in st.session_state and "demo-runs" not in st.session_state:
    from symalign.ui.demo_job import demo_to_resume

    resumed = demo_to_resume()  # a demo this browser started (or anyone's, still running) before a reload
    if resumed is not None:
        st.session_state["demo-job"] = resumed

if "demo-job" in st.session_state:
    from symalign.ui.demo_job import follow_demo

    follow_demo(st.session_state["demo-job"])

if "demo-runs" in st.session_state and "demo-planted" not in st.session_state:  # a demo picked up after a reload
    from symalign.ui.state import planted_demo_task
    from symalign.ui.widgets import follow_task

    with user_errors():
        done = st.session_state["demo-recipe-done"]
        st.session_state["demo-planted"] = (done, follow_task(planted_demo_task(f"zoo:{done}/0", DEMO_DATA[done]),
                                                              "1 · the planted symmetry…"))

if "demo-planted" in st.session_state or "demo-runs" in st.session_state:
    from symalign.plots import curves_figure
    from symalign.ui.state import run_store

if "demo-planted" in st.session_state:
    recipe_done, planted = st.session_state["demo-planted"]
    st.subheader(f"1 · The same function, far apart in weight space ({recipe_done}/0)")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("max |Δ logit|, A vs T(A)", f"{planted.function_gap:.1e}",  # short: a quarter of 1280 px
              help="between A and T(A): the same function")
    c2.metric("weights moved (relative)", f"{100 * planted.weight_change:.0f}%")
    c3.metric("vanilla barrier", f"{planted.vanilla['barrier']:.3f}")
    c4.metric("barrier after weight matching", f"{planted.aligned['barrier']:.2e}")
    show_figure(curves_figure([("A ↔ T(A), no alignment", planted.vanilla),
                                   ("A ↔ T(A), weight matching", planted.aligned)], methods=["none", "weight"]),
                    key="demo-planted-fig")
    st.caption(f"Weight matching with the planted classes found T⁻¹ in {planted.align_seconds:.1f} s; the barrier "
               f"fell from {planted.vanilla['barrier']:.3f} to {planted.aligned['barrier']:.2e}.")

if "demo-runs" in st.session_state:
    store = run_store()
    with user_errors():
        runs = [store.get(i) for i in st.session_state["demo-runs"] if i]
        st.subheader("2 · Two seeds trained apart")
        cols = st.columns(len(runs))
        for col, run in zip(cols, runs):
            col.metric(f"{run.label.removeprefix('demo: ')} · barrier", f"{run.metrics['barrier']:.3f}")
        from symalign.ui.explain import demo_conclusion

        if len(runs) == 3:  # what to conclude, beside the numbers it is drawn from
            st.markdown(demo_conclusion({r.label.removeprefix("demo: "): r.metrics["barrier"] for r in runs},
                                        st.session_state.get("demo-recipe-done", recipe)))
        from symalign.ui.lambda_panel import curves_at_lambda

        curves_at_lambda(runs, [r.label.removeprefix("demo: ") for r in runs], "demo",  # short: one legend row
                         "The model at λ, at work: the unaligned path beside the aligned one")
        st.caption("These runs are in the run history: overlay them on the Interpolation page or "
                   "put them side by side on Compare matchers.")
