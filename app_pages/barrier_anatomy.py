"""Where the barrier lives: which parameter group holds it, how alike the two models' features are,
and which of learned matching's transforms carries its gain. A thin page over
symalign.landscape.attribution, symalign.match.activation.correlations and symalign.landscape.swaps (the same as
`symalign attribute`, `symalign correlations` and `symalign attribute --swap`)."""

import streamlit as st

from symalign.landscape.attribution import attribute
from symalign.landscape.swaps import swap_barriers
from symalign.match.activation.correlations import feature_correlations
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize
from symalign.models.io import default_data_spec
from symalign.models.widen import check_pair
from symalign.plots.attribution import attribution_figure, swap_figure
from symalign.plots.correlations import correlation_curve_figure, head_map_figure
from symalign.ui.figures import show_figure
from symalign.ui.session import heavy_work
from symalign.ui.state import cached_data, cached_model
from symalign.ui.widgets import StreamlitProgress, data_field, model_picker, user_errors

VIEWS = {
    "By parameter group": "Move one group of parameters at a time along the path (each block's attention, MLP and "
                          "norms, the embeddings, the head) with the rest held at A or at B. The group whose move "
                          "alone raises the loss most halfway is where the barrier sits.",
    "Feature correlations": "Correlate unit i of A with unit i of B on data, per layer, before and after alignment. "
                            "Before alignment they have nothing to do with each other (≈ 0); after, they rise as far "
                            "as the two trainings learned the same features. The map shows whether whole heads found "
                            "partners: bright squares on the diagonal.",
    "Learned vs weight matching": "Start from weight matching's transform and switch one group (the residual map, "
                                  "a block's attention, a block's MLP) to what learned matching found. The group whose "
                                  "switch alone closes most of the gap is where learning's correction matters.",
    "Against width": "The same recipe trained at several widths, two seeds each, aligned at each width. Narrow "
                     "models keep more of their barrier after alignment; as they widen, alignment closes more of "
                     "it: linear mode connectivity after alignment emerges with width.",
}

POINTS, EXAMPLES = 7, 64  # a quick view: each group is a curve of its own
SAMPLE_NOTE = (f"Barriers in this view are measured at {POINTS} λ points on the first {EXAMPLES} evaluation examples "
               "(each parameter group is a curve of its own, so the view is kept quick): they differ in the second "
               "decimal from the 21-point barriers on the whole evaluation split that Align and the demo report.")

st.title("Where the barrier lives")
st.caption("After alignment a barrier often remains. These views say where: in which layer, in which component, "
           "and in which transform.")

with user_errors():
    view = st.radio("view", list(VIEWS), horizontal=True, key="anatomy-view")
    st.markdown(VIEWS[view])
    if view == "Against width":
        from symalign.ui.runs import show_width_sweeps

        show_width_sweeps()
        st.stop()
    left, right = st.columns(2)
    with left:
        ref_a = model_picker("model A", key="anatomy-a", default_ref="zoo:gpt-shakespeare/0")
    with right:
        ref_b = model_picker("model B", key="anatomy-b", default_ref="zoo:gpt-shakespeare/1")
    a, b = cached_model(ref_a), cached_model(ref_b)
    check_pair(a, b)
    cols = st.columns(3)
    recipe_data = default_data_spec(a)  # the field is keyed by it: another family's pair starts from its own data
    spec = data_field(cols[0], "data", recipe_data, key=f"anatomy-data-{recipe_data}")
    preset = cols[1].selectbox("symmetry classes", ["all", "permutations"], key="anatomy-preset")
    if view == "By parameter group":
        method = cols[2].selectbox("align B first with", ["none", "weight", "activation", "learned"],
                                   key="anatomy-method")
    elif view == "Feature correlations":
        method = cols[2].selectbox("align B with", ["activation", "weight", "learned"], key="anatomy-method-c")
    else:
        method = "learned"
        steps = cols[2].number_input("learned steps", 10, 1000, 100, step=10, key="anatomy-steps")
    request = (view, ref_a, ref_b, spec, preset, method, steps if view.startswith("Learned") else None)
    if st.button("Compute", type="primary", key="anatomy-go"):
        data = cached_data(spec)
        ca, cb = canonicalize(a), canonicalize(b)
        config = AlignConfig(method=method if method != "none" else "weight", preset=preset, data=spec,
                             steps=int(steps) if view.startswith("Learned") else None)
        with heavy_work("this analysis"):
            bar = StreamlitProgress("working…")
            if view == "By parameter group":
                aligned = cb if method == "none" else align(ca, cb, config).aligned
                whole, groups = attribute(ca, canonicalize(aligned), data, points=POINTS, max_examples=EXAMPLES,
                                          progress=lambda d, t: bar("groups", d, t))
                result = {"a": ref_a, "b": ref_b, "method": method, "barrier": whole,
                          "groups": [g.to_json() for g in groups]}
            elif view == "Feature correlations":
                aligned = align(ca, cb, config).aligned
                result = {"report": feature_correlations(ca, cb, aligned, data, max_examples=128)}
            else:
                alignment = align(ca, cb, config, progress=lambda d, t, *_: bar("learned matching", d, t))
                weight, learned, swaps = swap_barriers(ca, cb, alignment.start, alignment.transform, data,
                                                       points=POINTS, max_examples=EXAMPLES,
                                                       progress=lambda d, t: bar("swaps", d, t))
                result = {"a": ref_a, "b": ref_b, "method": "learned", "weight_barrier": weight,
                          "learned_barrier": learned, "swaps": [s.to_json() for s in swaps]}
            bar.done()
        st.session_state["anatomy-result"] = (request, result)
    stored = st.session_state.get("anatomy-result")
    if stored is None or stored[0] != request:
        st.info("Choose the pair and the view, then Compute (about 10–30 s on the zoo; learned matching longer).")
        st.stop()
    result = stored[1]
    if view != "Feature correlations":
        st.caption(SAMPLE_NOTE)
    if view == "By parameter group":
        show_figure(attribution_figure(result), key="anatomy-groups")
    elif view == "Feature correlations":
        report = result["report"]
        layer = st.select_slider("block of the head map", options=[h.layer for h in report.heads],
                                 key="anatomy-layer")
        shown = report.to_json(matrices_of=layer)
        show_figure(correlation_curve_figure(shown, f"{method} matching: {ref_a} ↔ {ref_b}"), key="anatomy-curve")
        show_figure(head_map_figure(shown, layer), key="anatomy-heads")
    else:
        show_figure(swap_figure(result), key="anatomy-swaps")
