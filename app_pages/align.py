"""Align: two models (or three: universe alignment), a method, per-component symmetry toggles from
the spec; the result is a run."""

from dataclasses import replace

import streamlit as st

from symalign.data import learned_defaults
from symalign.data.splits import SPLITS
from symalign.errors import SymalignError
from symalign.landscape.estimate import readable
from symalign.match.config import AlignConfig
from symalign.match.matchers import matchers
from symalign.models.compat import check_compatible
from symalign.models.io import default_data_spec
from symalign.models.readiness import readiness
from symalign.models.widen import check_pair, same_widths, width_summary
from symalign.plots import curves_figure
from symalign.runs.durations import LEARNERS, align_estimate, align_typical, estimate_text, family_of_ref
from symalign.runs.table import run_label
from symalign.ui.figures import show_figure
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.option_widgets import option_widgets
from symalign.ui.permalink import linked_runs, show_permalink
from symalign.ui.runs import show_universe
from symalign.ui.session import heavy_work
from symalign.ui.state import (
    cached_canonical_spec,
    cached_curve_estimate,
    cached_data,
    cached_load,
    cached_model,
    run_store,
)
from symalign.ui.widgets import (
    StreamlitProgress,
    chosen_layers,
    data_field,
    device_choice,
    model_picker,
    toggle_grid,
    user_errors,
)
from symalign.workflows.execute import align_then_vanilla
from symalign.workflows.many import align_many_run

st.title("Align two (or three) models")
third = st.toggle("add a third model: align all three into A's basis (universe alignment)", key="align-three")
columns = st.columns(3 if third else 2)
with columns[0]:
    ref_a = model_picker("model A (the reference basis)", "align-a", 0, default_ref="zoo:vit-digits/0")  # the demo's
with columns[1]:
    ref_b = model_picker("model B (re-expressed in A's basis)", "align-b", 1, default_ref="zoo:vit-digits/1")
ref_c = None
if third:
    with columns[2]:
        ref_c = model_picker("model C (re-expressed in A's basis)", "align-c", 2, default_ref="zoo:vit-digits/2")

with user_errors():
    if not ref_a or not ref_b or (third and not ref_c):
        st.info("Pick the models (or type directory paths).")
        st.stop()
    model_a, model_b = cached_model(ref_a), cached_model(ref_b)
    model_c = cached_model(ref_c) if third else None
    mismatch = None  # a pair that cannot be aligned: said beside the pickers, the form stays (issue #43)
    try:
        if model_c is not None:  # a universe needs one shape
            check_compatible(model_a, model_b)
            check_compatible(model_a, model_c)
        else:
            check_pair(model_a, model_b)
    except SymalignError as exc:
        mismatch = str(exc)
        columns[-1].error(f"{mismatch}. Pick another model to align; the settings below are kept.")
    if mismatch is None and model_c is None:
        if not same_widths(model_a, model_b):
            st.info(f"Models of different widths ({width_summary(model_a)} vs {width_summary(model_b)}): the "
                    "narrower one is embedded in the wider one's basis first, with the same function (its new "
                    "units and heads are empty; see docs/widths.md), then aligned and interpolated at the wide shape.")
    spec = cached_canonical_spec(ref_a)

    m1, m2, m3 = st.columns(3)
    offered = matchers(universe=third)  # every registered matcher (three models: those that align a universe)
    methods = list(offered)
    method = m1.selectbox("method", methods, index=methods.index("weight"), key="align-method")
    m1.caption(offered[method].help)  # beside the box, not in it: the box would cut it at 1280 px
    try:
        data_default = default_data_spec(model_a)
    except SymalignError:  # a model without a training record: the user names the data
        data_default = ""
    data = data_field(m2, "data", data_default, key=f"align-data:{ref_a}")  # follows model A
    # what measuring needs (data, a tokenizer, a fit): a run bound to fail is not offered (issue #109)
    lacking = "" if mismatch else " ".join(
        f"Model {name}: {found.reason()}" for name, model in zip("ABC", (model_a, model_b, model_c))
        if model is not None and not (found := readiness(model, data or data_default)).ready)
    with m3:
        device = device_choice("align-device")

    st.markdown("**Symmetries to use** (the canonical form is used, so the residual admits rotations)")
    classes = toggle_grid(spec, blocks=True)
    layers = chosen_layers()
    if layers and classes.get("residual", "none") != "none":
        st.caption("Block ranges given: the residual map would move every block, so it is left out of this run.")
        classes["residual"] = "none"

    with st.expander("method options and measurement"):
        o1, o2, o3 = st.columns(3)
        # the method's own options, from what it declares (symalign.match.options)
        chosen = option_widgets(method, data, third, [o1, o2, o3])
        seed = o1.number_input("seed", 0, 1_000_000, 0, key="align-seed")
        points = o2.number_input("interpolation points", 3, 101, 21, key="align-points")
        max_examples = o3.number_input("evaluation examples (0 = all)", 0, 1_000_000, 0, key="align-max-examples")
        with_vanilla = o1.checkbox("also record the vanilla barrier", True, key="align-vanilla", disabled=third)
        split = o2.radio("measure on", SPLITS, key="align-split", horizontal=True,
                         format_func=lambda s: {"eval": "evaluation split", "train": "training split"}[s],
                         help="the held-out split, or the data the pair was trained on (as the papers also report)")

    config = AlignConfig.from_options({k: v for k, v in chosen.items() if v is not None}, method=method,
                                      classes=classes, data=data or None, device=device, seed=int(seed),
                                      layers=layers)
    st.session_state["align-config"] = config.to_json()
    with st.expander("run configuration"):
        st.json(config.to_json())

    if data or data_default:
        try:  # a timed probe batch: a real checkpoint's curve can take many minutes on a CPU
            estimate = cached_curve_estimate(ref_a, data or data_default, int(max_examples) or None)
            curves = 3 if third else 1 + bool(with_vanilla)
            st.caption(f"Measuring takes about {readable(estimate.seconds(int(points)) * curves)} "
                       f"({curves} curve{'s' if curves > 1 else ''} × {int(points)} points × {estimate.examples} "
                       "examples, timed on one batch), besides the matching itself; fewer evaluation examples or "
                       "interpolation points (method options) make it shorter.")
        except SymalignError:
            pass  # the data does not fit: the run says so in one line
    if method in LEARNERS and not third:  # the matching's own time: minutes for a learner (issue #56)
        steps = int(chosen.get("steps") or learned_defaults(data or data_default or "")["steps"])
        past = align_estimate(run_store(), method, ref_a, ref_b, steps)
        typical_seconds, typical = align_typical(method, family_of_ref(ref_a), steps)
        (st.warning if max(past or 0.0, typical_seconds) >= 90 else st.caption)(
            f"The {method} matching itself: " + estimate_text(past, typical, cached_load(), typical_seconds) + ".")
    background = st.checkbox("run in the background", True, key="align-background",
                             help="a job in a worker process: it goes on when you leave this page (see Jobs)")
    nothing = all(c == "none" for c in classes.values())
    if nothing and method != "none":  # issue #56: such a run went on for 12 s and changed nothing
        st.warning("No symmetry class is ticked: the matcher has nothing to move, so aligned B would be B. Tick "
                   "at least one class above (the presets set several at once).")
    if lacking:
        st.warning(f"Not yet: {lacking}")
    clicked = st.button("Align", type="primary", key="align-go", disabled=mismatch is not None or bool(lacking) or
                        (nothing and method != "none"),
                        help=f"not this pair: {mismatch}" if mismatch else lacking if lacking else
                        "tick at least one symmetry class" if nothing and method != "none" else None)
    if clicked and background:
        n = int(max_examples) or None
        if third:
            kind, request = "align-many", {"models": [ref_a, ref_b, ref_c], "points": int(points), "max_examples": n,
                                           "split": split,
                                           "config": replace(config, data=data or data_default).to_json()}
        else:
            kind, request = "align", {"a": ref_a, "b": ref_b, "points": int(points), "max_examples": n, "split": split,
                                      "config": config.to_json(), "with_vanilla": bool(with_vanilla)}
        st.session_state["align-last-job"] = submit_job(kind, request, label=f"{config.method}: {ref_a} ↔ {ref_b}"
                                                        + (f" ↔ {ref_c}" if third else ""))
        st.session_state.pop("align-last", None)
        if third:
            st.session_state["align-last-refs"] = [ref_a, ref_b, ref_c]
    elif clicked:
        with heavy_work("the alignment"):
            store = run_store()
            data_source = cached_data(data or data_default)
            bar = StreamlitProgress("aligning…")
            n = int(max_examples) or None
            if third:
                many = align_many_run([model_a, model_b, model_c], replace(config, data=data or data_default),
                                      measure=True, points=int(points), max_examples=n, store=store, source="app",
                                      progress=bar, data_source=data_source, split=split)
                bar.done()
                st.session_state["align-last"] = [many.run_id]
                st.session_state["align-last-refs"] = [ref_a, ref_b, ref_c]
                st.rerun()
            ids = align_then_vanilla(model_a, model_b, replace(config, data=data or data_default), with_vanilla,
                                     points=int(points), max_examples=n, store=store, source="app", progress=bar,
                                     data_source=data_source, reuse=True, split=split)
            bar.done()
            st.session_state["align-last"] = ids

if "align-last" not in st.session_state and "align-last-job" not in st.session_state:
    linked = linked_runs("run")  # a link to a result: ?run=ID[,VANILLA_ID]
    if linked:
        st.session_state["align-last"] = linked

resume_job(("align", "align-many"), "align-last")  # this browser's job still under way, after a reload
if "align-last-job" in st.session_state:
    with user_errors():
        follow_job(st.session_state["align-last-job"], "align-last")

if "align-last" in st.session_state:
    with user_errors():
        runs = [run_store().get(i) for i in st.session_state["align-last"]]
        aligned = runs[0]
        if aligned.kind == "align-many":
            show_universe(aligned)
            st.stop()
        st.subheader("Result")
        r1, r2, r3, r4 = st.columns(4)
        r1.metric("barrier after alignment", f"{aligned.metrics['barrier']:.4f}")
        if len(runs) > 1:
            r2.metric("vanilla barrier", f"{runs[1].metrics['barrier']:.4f}",
                      help=f"run {runs[1].id}: the same models, data, points and examples, no alignment")
        r3.metric("weight distance", f"{aligned.metrics['distance_after']:.2f}",
                  delta=f"{aligned.metrics['distance_after'] - aligned.metrics['distance_before']:.2f}",
                  delta_color="inverse")
        r4.metric("seconds", f"{aligned.metrics['seconds']:.1f}")
        show_figure(curves_figure([(run_label(r), r.curve) for r in runs], methods=[r.method for r in runs]),
                        key="align-fig")
        st.caption(f"Saved as run {aligned.id}: the aligned checkpoint (same function as B, max |Δlogit| "
                   f"{aligned.metrics['function_gap_vs_b']:.1e}) is in `{aligned.artifacts}`.")
        show_permalink("align", {"run": ",".join(r.id for r in runs)})
