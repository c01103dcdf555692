"""Simplex: the loss over every mixture of three models, for several alignment methods side by side."""

import streamlit as st

from symalign.data import learned_defaults
from symalign.errors import SymalignError
from symalign.match.config import AlignConfig
from symalign.match.matchers import matchers
from symalign.models.compat import check_compatible
from symalign.models.io import default_data_spec
from symalign.runs.durations import estimate_text, family_of_ref, simplex_estimate, simplex_typical
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.permalink import initial_list, show_permalink
from symalign.ui.runs import show_simplex, simplex_runs
from symalign.ui.session import heavy_work
from symalign.ui.state import cached_canonical_spec, cached_data, cached_load, cached_model, run_store
from symalign.ui.widgets import StreamlitProgress, data_field, device_choice, model_picker, toggle_grid, user_errors
from symalign.workflows.many import simplex_run

st.title("Loss over the simplex of three models")
st.markdown("Every point of the triangle is a mixture θ = w_A·θ_A + w_B·θ_B + w_C·θ_C (corners: the models, edges: "
            "the pairwise paths). The **near-zero region** is where the loss is at most ε above the plane through the "
            "three corner losses; Theus et al. find that learned matching opens the widest one. All panels share one "
            "colour scale.")

cols = st.columns(3)
refs = []
for i, col in enumerate(cols):
    with col:
        refs.append(model_picker(f"model {'ABC'[i]}" + (" (the reference basis)" if i == 0 else ""), f"simplex-{i}", i,
                                 default_ref=f"zoo:vit-digits/{i}"))

with user_errors():
    if not all(refs):
        st.info("Pick three models of one architecture (or type directory paths).")
        st.stop()
    models = [cached_model(r) for r in refs]
    for other in models[1:]:
        check_compatible(models[0], other)
    spec = cached_canonical_spec(refs[0])
    m1, m2, m3 = st.columns(3)
    offered = matchers(universe=True)
    methods = m1.multiselect("methods", list(offered), default=[m for m in ("none", "weight",
                                                                            "learned") if m in offered],
                             key="simplex-methods",  # names only: help in pills was cut at 1280 px (#70)
                             help="  \n".join(f"**{m}**: {o.help}" for m, o in offered.items()))
    try:
        data_default = default_data_spec(models[0])
    except SymalignError:
        data_default = ""
    data = data_field(m2, "data", data_default, key=f"simplex-data:{refs[0]}")
    with m3:
        device = device_choice("simplex-device")
    st.markdown("**Symmetries to use** (for weight and learned matching)")
    classes = toggle_grid(spec, default="all", prefix="simplex-")
    with st.expander("grid and learning options"):
        o1, o2, o3 = st.columns(3)
        resolution = o1.slider("resolution (grid steps per edge)", 1, 20, 10, key="simplex-resolution",
                               help="(r+1)(r+2)/2 points: 10 gives 66")
        epsilon = o2.number_input("ε of the near-zero region", 0.0, 10.0, 0.05, format="%.3f", key="simplex-epsilon")
        max_examples = o3.number_input("evaluation examples (0 = all)", 0, 1_000_000, 0, key="simplex-max-examples")
        steps = o1.number_input("learned: steps (at most)", 1, 20_000,
                                learned_defaults(data or data_default or "")["steps"],
                                key=f"simplex-steps-{data or data_default}",
                                help="the default is the data's (600 images, 300 text)")
        alpha = o2.number_input("learned: Dirichlet α", 0.01, 100.0, 1.0, key="simplex-alpha",
                                help="mixing weights per step ~ Dirichlet(α·1); 1 = uniform over the simplex")
        seed = o3.number_input("seed", 0, 1_000_000, 0, key="simplex-seed")

    background = st.checkbox("run in the background", True, key="simplex-background",
                             help="a job in a worker process: it goes on when you leave this page (see Jobs)")
    clicked = st.button("Compute the surfaces", type="primary", key="simplex-go", disabled=not methods)
    typical_seconds, typical = simplex_typical(tuple(methods), int(steps), family_of_ref(refs[0]))
    measured = simplex_estimate(run_store(), refs[0], tuple(methods))
    (st.warning if max(measured or 0, typical_seconds) >= 90 else st.caption)(
        "Time: " + estimate_text(measured, typical, cached_load(), typical_seconds))
    configs = [AlignConfig(method=method, classes=classes, data=data or data_default, device=device, seed=int(seed),
                           steps=int(steps), alpha=float(alpha)) for method in methods]
    if clicked and background:
        request = {"models": refs, "configs": [c.to_json() for c in configs], "resolution": int(resolution),
                   "epsilon": float(epsilon), "max_examples": int(max_examples) or None}
        st.session_state["simplex-last-job"] = submit_job("simplex", request,
                                                          label=f"simplex ({', '.join(methods)}): {' · '.join(refs)}")
        st.session_state.pop("simplex-last", None)
    elif clicked:
        with heavy_work("the surfaces"):
            data_source = cached_data(data or data_default)
            bar = StreamlitProgress("computing…")
            ids = []
            for config in configs:
                method = config.method
                ids.append(simplex_run(models, config, resolution=int(resolution), epsilon=float(epsilon),
                                       max_examples=int(max_examples) or None, store=run_store(), source="app",
                                       progress=lambda phase, d, t, *_, m=method: bar(f"{m}: {phase}", d, t),
                                       data_source=data_source)[0])
            bar.done()
        st.session_state["simplex-last"] = ids

resume_job(("simplex",), "simplex-last")  # this browser's job still under way, after a reload
if "simplex-last-job" in st.session_state:
    with user_errors():
        follow_job(st.session_state["simplex-last-job"], "simplex-last")

with user_errors():
    recorded = simplex_runs(run_store().list(kind="simplex"))
    if not recorded:
        st.info("No simplex runs yet: pick three models and compute the surfaces, or run `symalign simplex A B C "
                "--method learned --classes all`.")
        st.stop()
    labels = {r.id: f"{r.method} · {' · '.join(r.all_models)} · r={r.metrics['resolution']} [{r.id[-6:]}]"
              for r in recorded}
    last = [i for i in st.session_state.get("simplex-last", []) if i in labels]
    linked = initial_list("simplex-shown", "runs", list(labels))  # ?runs=ID,ID: a shared result (issue #56)
    shown = st.multiselect("simplex runs to show", list(labels), default=last or linked or list(labels)[:3],
                           format_func=labels.get, key="simplex-shown")
    show_simplex([r for r in recorded if r.id in shown], key="simplex-fig")
    if shown:
        show_permalink("simplex", {"runs": ",".join(shown)})
