"""Merge: align models into the first one's basis and combine them (average, Fisher, RegMean);
the merged checkpoint downloads as a zip. The science is in symalign.merge."""

import pandas as pd
import streamlit as st

from symalign.barrier import default_data_spec
from symalign.errors import SymalignError
from symalign.models.io import checkpoint_zip
from symalign.runs.execute import merge_run
from symalign.runs.table import run_label
from symalign.ui.jobs import follow_job, submit_job
from symalign.ui.routing import route_through_app
from symalign.ui.state import cached_model, run_store
from symalign.ui.widgets import StreamlitProgress, model_picker, user_errors

route_through_app()  # opened by its own link: go through app.py's navigation

ALIGN_TEXT = {"weight": "weight matching (all classes)", "learned": "learned matching (all classes)",
              "none": "none (merge as they are)"}
HOW_TEXT = {"average": "average", "fisher": "Fisher-weighted average", "regmean": "RegMean (per linear map)"}

st.title("Merge models")
st.markdown("Bring the models into the first one's basis, then combine their weights into one model. Without "
            "alignment, averaging mixes units and heads that do different jobs; after it, the average is a model in "
            "its own right. Fisher merging weights each parameter by how sure each model is of it; RegMean solves, "
            "per linear map, for the weights that best reproduce every model's outputs on its own inputs.")

third = st.toggle("merge three models", key="merge-three")
cols = st.columns(3 if third else 2)
refs = []
for i, col in enumerate(cols):
    with col:
        refs.append(model_picker(f"model {'ABC'[i]}" + (" (the reference basis)" if i == 0 else ""), f"merge-{i}", i,
                                 default_ref=f"zoo:vit-digits/{i}"))

with user_errors():
    if not all(refs):
        st.info("Pick the models to merge (or type directory paths).")
        st.stop()
    first = cached_model(refs[0])
    try:
        data_default = default_data_spec(first)
    except SymalignError:
        data_default = ""
    c1, c2, c3 = st.columns(3)
    how_align = c1.selectbox("alignment", list(ALIGN_TEXT), key="merge-align", format_func=ALIGN_TEXT.get)
    how = c2.selectbox("merge rule", list(HOW_TEXT), key="merge-how", format_func=HOW_TEXT.get)
    data = c3.text_input("data (statistics and evaluation)", data_default, key=f"merge-data:{refs[0]}")
    o1, o2 = st.columns(2)
    examples = o1.number_input("training examples for Fisher / RegMean statistics", 1, 100_000, 64, key="merge-examples")
    max_examples = o2.number_input("evaluation examples (0 = all)", 0, 1_000_000, 0, key="merge-max-examples")
    background = st.checkbox("run in the background", key="merge-background",
                             help="a job in a worker process: it goes on when you leave this page (see Jobs)")
    if st.button("Merge", type="primary", key="merge-go"):
        if not data:
            raise SymalignError("name the data to evaluate on (e.g. digits or shakespeare)")
        request = {"models": refs, "align": how_align, "how": how, "data": data, "examples": int(examples),
                   "max_examples": int(max_examples) or None}
        st.session_state.pop("merge-last", None)
        if background:
            st.session_state["merge-last-job"] = submit_job("merge", request, label=f"merge ({how}, {how_align})")
        else:
            bar = StreamlitProgress("merging…")
            run = merge_run(refs, how_align, how, data, examples=int(examples), max_examples=int(max_examples) or None,
                            store=run_store(), source="app", progress=bar)
            bar.done()
            st.session_state["merge-last"] = [run.run_id]

if "merge-last-job" in st.session_state:
    with user_errors():
        follow_job(st.session_state["merge-last-job"], "merge-last")

if st.session_state.get("merge-last"):
    with user_errors():
        run = run_store().get(st.session_state["merge-last"][0])
        st.subheader(run_label(run))
        rows = [{"model": r["model"], "loss": r["loss"], "accuracy": r["accuracy"]} for r in run.metrics["inputs"]]
        rows.append({"model": "merged", **run.metrics["merged"]})
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="merge-table")
        st.download_button("download the merged checkpoint (zip)", checkpoint_zip(run.artifacts),
                           file_name=f"merged-{run.id[-6:]}.zip", mime="application/zip", key="merge-download")
        st.caption(f"A standard Hugging Face checkpoint (canonical form) in `{run.artifacts}`; upload the zip on "
                   "Models, or load it with `transformers`. The run is in the history.")
