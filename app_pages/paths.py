"""Beyond the straight line: curved low-loss paths beside the (aligned) straight line, and the plane they lie in."""

import streamlit as st

from symalign.errors import SymalignError
from symalign.landscape.curve_options import BENDS, CurveOptions
from symalign.match.config import AlignConfig
from symalign.match.matchers import matchers
from symalign.models.compat import check_compatible
from symalign.models.io import default_data_spec
from symalign.ui.curves import curve_runs_of, paths_of, plane_of, plane_settings, show_paths, students_text
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.state import cached_canonical_spec, cached_model, run_store
from symalign.ui.widgets import data_field, model_picker, toggle_grid, user_errors
from symalign.workflows.curves import find_plane

st.title("Beyond the straight line")
st.markdown("Two trained networks are joined by a **curved** path of nearly constant loss even where the straight "
            "line between them climbs a barrier (Garipov et al.; Draxler et al.). Linear mode connectivity is the "
            "stronger claim: once the symmetries are factored out, the **straight** line is enough.")

c1, c2 = st.columns(2)
with c1:
    ref_a = model_picker("model A (the reference basis)", "paths-a", 0, default_ref="zoo:vit-digits/0")
with c2:
    ref_b = model_picker("model B", "paths-b", 1, default_ref="zoo:vit-digits/1")

with user_errors():
    if not (ref_a and ref_b):
        st.info("Pick two models of one architecture.")
        st.stop()
    check_compatible(cached_model(ref_a), cached_model(ref_b))
    try:
        data_default = default_data_spec(cached_model(ref_a))
    except SymalignError:
        data_default = ""
    m1, m2, m3 = st.columns(3)
    offered = [m for m in matchers() if m != "none"]
    method = m1.selectbox("alignment", offered, index=offered.index("weight") if "weight" in offered else 0,
                          key="paths-method", help="how B is brought into A's basis for the aligned line and curve")
    bend = m2.selectbox("curve", BENDS, key="paths-bend",
                        help="bezier: a quadratic Bézier curve; polychain: two straight segments through a fitted node")
    data = data_field(m3, "data", data_default, key=f"paths-data:{ref_a}")
    st.markdown("**Symmetries to use** for the alignment")
    classes = toggle_grid(cached_canonical_spec(ref_a), default="all", prefix="paths-")
    with st.expander("fit options"):
        o1, o2, o3 = st.columns(3)
        defaults = CurveOptions()
        steps = o1.number_input("steps", 1, 20_000, defaults.steps, key="paths-steps")
        lr = o2.number_input("learning rate", 1e-5, 1.0, defaults.lr, format="%.4f", key="paths-lr")
        max_examples = o3.number_input("evaluation examples (0 = all)", 0, 1_000_000, 512, key="paths-examples")
    options = CurveOptions(bend, int(steps), float(lr))
    config = AlignConfig(method=method, classes=classes, data=data or data_default)
    request = {"a": ref_a, "b": ref_b, "config": config.to_json(), "options": vars(options),
               "data": data or data_default, "max_examples": int(max_examples) or None}
    if st.button("Fit the curves", type="primary", key="paths-go"):
        # a background job: closing or reloading the tab does not stop it, and a fit asked before is reused
        st.session_state["paths-last-job"] = submit_job("curve", request, label=f"curves: {ref_a} ↔ {ref_b}")
        st.session_state.pop("paths-last", None)
    st.caption("Two fits (before and after alignment): about 10 s each on vit-digits and 2 minutes each on "
               "gpt-shakespeare at 400 steps on 2 CPU cores; each is recorded and reused when asked again.")

resume_job(("curve",), "paths-last")
if "paths-last-job" in st.session_state:
    with user_errors():
        follow_job(st.session_state["paths-last-job"], "paths-last")

with user_errors():
    runs = curve_runs_of(run_store(), ref_a, ref_b, st.session_state.get("paths-last"))
    fitting = "paths-last-job" in st.session_state  # a fit job of this browser still under way
    if not runs:
        if fitting:
            st.info("The fits are running (progress above): each curve shows here as it lands.")
        else:
            st.info("No curves for this pair yet: click **Fit the curves**, or run `symalign curve A B --align "
                    "weight --classes all` and `symalign curve A B`.")
        st.stop()
    if fitting and len(runs) < 2:
        st.caption(f"The {'aligned' if runs[0].method == 'none' else 'unaligned'} fit is still running (progress "
                   "above); its curve joins these when it lands.")
    show_paths(paths_of(runs), key="paths-fig")
    st.markdown(students_text(runs))
    aligned = next((r for r in runs if r.method != "none"), None)
    st.subheader("The plane the paths lie in")
    third = st.radio("third point of the plane", ["the curve's bend", "aligned B"], horizontal=True,
                     key="paths-third", disabled=aligned is None,
                     help="the curve's bend: the plane the unaligned curve lies in (Garipov et al. Fig. 1); "
                          "aligned B: A, B and B after alignment (Zhang et al. Fig. 2), curves projected onto it")
    resolution = st.slider("grid points per axis", 5, 31, 13, key="paths-resolution")
    settings = plane_settings(runs, third, int(resolution))
    if st.button("Draw the plane", key="paths-plane"):  # a job: progress by grid point, cancel, survives a reload
        if find_plane(run_store(), settings) is None:
            st.session_state["paths-plane-result-job"] = submit_job("plane", settings.to_json(),
                                                             label=f"plane through A, B and {settings.labels[2]}")
    resume_job(("plane",), "paths-plane-result")
    if "paths-plane-result-job" in st.session_state:
        follow_job(st.session_state["paths-plane-result-job"], "paths-plane-result", cancel=True)
    if plane_of(settings, key="paths-plane-fig"):  # drawn from the history once measured (this request or earlier)
        st.markdown("**For students.** Each point of the map is a network whose weights mix A, B and the third "
                    "point; the colour is its loss (dark is low). The paths are drawn in it: where the straight "
                    "line crosses a bright ridge, the curve bends around it through the dark valley.")
