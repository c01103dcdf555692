"""Merge & transport: merge aligned models (average, Fisher, RegMean), or carry a fine-tune's task
vector into another model; checkpoints download as zips. The science is in symalign.merge."""

import pandas as pd
import streamlit as st

from symalign.errors import SymalignError
from symalign.merge.builtin_rules import merge_rules
from symalign.merge.task_vectors import check_transport, parse_alphas
from symalign.models.io import checkpoint_zip, default_data_spec
from symalign.plots import transport_figure
from symalign.runs.table import run_label
from symalign.ui.figures import show_figure
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.permalink import linked_runs, show_permalink
from symalign.ui.session import heavy_work
from symalign.ui.state import cached_canonical_spec, cached_model, run_store
from symalign.ui.widgets import StreamlitProgress, data_field, model_picker, toggle_grid, user_errors
from symalign.workflows.merging import head_strategy_alignment, merge_alignment, merge_run, transport_run
from symalign.zoo import zoo_reference

ALIGN_TEXT = {"weight": "weight matching (all classes)", "learned": "learned matching (all classes)",
              "none": "none (as they are)"}
# Merging also offers the field's optimal-transport fusion (soft plans, so never for transport's task vectors).
MERGE_ALIGN_TEXT = {**ALIGN_TEXT, "ot-acts": "OT fusion on activations (OT-ACTS, Imfeld et al.)",
                    "ot-wts": "OT fusion on weights (OT-WTS, Imfeld et al.)"}
HEAD_STRATEGY_TEXT = {"circuit": "circuits (symalign's; the default)", "spectral": "spectra of q, k, v (TransFusion's)",
                      "brute-force": "brute force (each head pair aligned inside first)",
                      "none": "none (heads in order; the maps inside them still aligned)"}
HEAD_STRATEGY_HELP = (
    "**circuits**: heads compared by their whole QK and OV circuits (W_Q W_Kᵀ, W_V W_O), which no map inside a "
    "head changes; one assignment over heads. Fast: one product per head pair.  \n"
    "**spectra**: TransFusion's distance between the singular values of q, k and v, equally blind to maps inside "
    "heads; about as fast.  \n"
    "**brute force**: every head pair aligned inside first (a permutation or rotation, as the QK class says), then "
    "scored by how well it aligned: heads² inner alignments, the slowest (seconds on the zoo, more on wide models). "
    "\n"
    "**none**: heads kept in their order (no pairing cost), the maps inside each head still aligned.")
OT_SOLVER_TEXT = {"emd": "exact (EMD): equal widths give permutations", "sinkhorn": "Sinkhorn (soft plans)"}


def own_data(ref: str) -> str:
    try:
        return default_data_spec(cached_model(ref))
    except SymalignError:
        return ""


def download(run, name: str, key: str) -> None:
    st.download_button(f"download the {name} checkpoint (zip)", checkpoint_zip(run.artifacts),
                       file_name=f"{name}-{run.id[-6:]}.zip", mime="application/zip", key=key)
    st.caption(f"A standard Hugging Face checkpoint (canonical form) in `{run.artifacts}`; upload the zip on Models, "
               "or load it with `transformers`. The run is in the history.")


def merge_section() -> None:
    st.markdown("Bring the models into the first one's basis, then combine their weights into one model. Without "
                "alignment, averaging mixes units and heads that do different jobs; after it, the average is a model "
                "in its own right. Fisher merging weights each parameter by how sure each model is of it; RegMean "
                "solves, per linear map, for the weights that best reproduce every model's outputs on its own inputs.")
    third = st.toggle("merge three models", key="merge-three")
    refs = []
    for i, col in enumerate(st.columns(3 if third else 2)):
        with col:
            refs.append(model_picker(f"model {'ABC'[i]}" + (" (the reference basis)" if i == 0 else ""), f"merge-{i}",
                                     i, default_ref=f"zoo:vit-digits/{i}"))
    if not all(refs):
        st.info("Pick the models to merge (or type directory paths).")
        return
    c1, c2, c3 = st.columns(3)
    how_align = c1.selectbox("alignment", list(MERGE_ALIGN_TEXT), key="merge-align", format_func=MERGE_ALIGN_TEXT.get)
    rules = {n: r for n, r in merge_rules().items() if r.available}  # mergekit's methods appear with mergekit
    how = c2.selectbox("merge rule", list(rules), key="merge-how", format_func=lambda n: rules[n].label)
    data = data_field(c3, "data (statistics and evaluation)", own_data(refs[0]), key=f"merge-data:{refs[0]}")
    classes = None
    if how_align in ("weight", "learned"):  # the matcher's classes, as on Align (Zhang et al.: matching, then any rule)
        with st.expander("symmetry classes of the alignment (default: all)"):
            classes = toggle_grid(cached_canonical_spec(refs[0]), default="all", prefix="merge-")
    rule = rules[how]
    base = None
    if rule.needs_base:  # model A is the base the others were fine-tuned from
        base, refs = refs[0], refs[1:]
        st.caption(f"{rule.label} merges task vectors: model A is the base (the others are aligned into its basis).")
    parameters = {}
    if rule.parameters:
        st.caption(rule.help)
        for col, (name, default) in zip(st.columns(len(rule.parameters)), rule.parameters.items()):
            low, high = rule.bounds.get(name, (-1e6, 1e6))
            parameters[name] = float(col.number_input(name, float(low), float(high), float(default),
                                                      key=f"merge-param:{how}:{name}"))
    ot = ot_settings(how_align if how_align.startswith("ot-") else how)  # OT as the alignment, or as the rule
    o1, o2 = st.columns(2)
    examples = o1.number_input("training examples for Fisher / RegMean statistics", 1, 100_000, 64,
                               key="merge-examples")
    max_examples = o2.number_input("evaluation examples (0 = all)", 0, 1_000_000, 0, key="merge-max-examples")
    background = st.checkbox("run in the background", True, key="merge-background",
                             help="a job in a worker process: it goes on when you leave this page (see Jobs)")
    if st.button("Merge", type="primary", key="merge-go"):
        if not data:
            raise SymalignError("name the data to evaluate on (e.g. digits or shakespeare)")
        st.session_state.pop("merge-last", None)
        if background:
            request = {"models": refs, "align": how_align, "how": how, "data": data, "examples": int(examples),
                       "max_examples": int(max_examples) or None, "base": base, "parameters": parameters, "ot": ot,
                       "classes": classes}
            st.session_state["merge-last-job"] = submit_job("merge", request, label=f"merge ({how}, {how_align})")
        else:
            with heavy_work("the merge"):
                bar = StreamlitProgress("merging…")
                run = merge_run(refs, how_align, how, data, examples=int(examples),
                                max_examples=int(max_examples) or None, store=run_store(), source="app", progress=bar,
                                base=base, parameters=parameters, ot=ot,
                                alignment=merge_alignment(how_align, classes, data))
                bar.done()
            st.session_state["merge-last"] = [run.run_id]
    if "merge-last" not in st.session_state and "merge-last-job" not in st.session_state:
        linked = linked_runs("run", kind="merge")  # a shared merge result
        if linked:
            st.session_state["merge-last"] = linked[:1]
    resume_job(("merge",), "merge-last")  # this browser's job still under way, after a reload
    if "merge-last-job" in st.session_state:
        follow_job(st.session_state["merge-last-job"], "merge-last")
    if st.session_state.get("merge-last"):
        run = run_store().get(st.session_state["merge-last"][0])
        st.subheader(run_label(run))
        rows = [{"model": zoo_reference(r["model"]), "loss": r["loss"], "accuracy": r["accuracy"]}
                for r in run.metrics["inputs"]]  # zoo:RECIPE/SEED, not the checkout's absolute path
        rows += [{"model": f"{zoo_reference(r['model'])} as carried by the OT plans", "loss": r["loss"],
                  "accuracy": r["accuracy"]}
                 for r in run.metrics.get("carried", [])]
        rows.append({"model": "merged", **run.metrics["merged"]})
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="merge-table")
        download(run, "merged", "merge-download")
        show_permalink("merge", {"run": run.id})


def ot_settings(how_align: str) -> dict | None:
    """OT fusion's solver and Sinkhorn strength, for OT as the alignment or as the merge rule after one
    (Zhang et al.'s plug-in); None otherwise."""
    if not how_align.startswith("ot-"):
        return None
    s1, s2 = st.columns(2)
    solver = s1.selectbox("transport plans", list(OT_SOLVER_TEXT), key="merge-ot-solver",
                          format_func=OT_SOLVER_TEXT.get)
    reg = None
    if solver == "sinkhorn":
        reg = float(s2.number_input("Sinkhorn strength (on the max-normalised cost)", 0.001, 10.0,
                                    0.08 if how_align == "ot-acts" else 0.06, format="%.3f",
                                    key=f"merge-ot-reg:{how_align}"))
    if solver == "sinkhorn":  # issue #56: the caption spoke of soft plans with exact EMD chosen
        st.caption("Soft plans blur B's units into A's: B as carried is no longer B's function (the table shows "
                   "both), and the fused model is what the comparison is about (Sweeps: `--preset peers`).")
    else:
        st.caption("Exact plans between equal widths are permutations: B as carried keeps B's function, and the "
                   "fusion is an alignment by transport followed by averaging (Sweeps: `--preset peers`).")
    return {"solver": solver, "reg": reg}


def transport_section() -> None:
    st.markdown("A fine-tune A′ of a base A holds a *task vector* τ = A′ − A, written in A's basis. Align A to another "
                "model B, re-express τ in B's basis, and add α·τ to B: does B learn the task? (α = 0 is B itself.)")
    c1, c2, c3 = st.columns(3)
    with c1:
        ref_a = model_picker("A (the base)", "transport-a", 0, default_ref="zoo:vit-digits/0")
    with c2:
        ref_ft = model_picker("A′ (A fine-tuned)", "transport-ft", 0, default_ref="zoo:vit-digits-flipped/0")
    with c3:
        ref_b = model_picker("B (receives the task)", "transport-b", 1, default_ref="zoo:vit-digits/1")
    if not (ref_a and ref_ft and ref_b):
        st.info("Pick the base, its fine-tune and the receiving model.")
        return
    o1, o2, o3, o4 = st.columns([1.4, 1, 1, 1])  # the alignment's names are the longest: not cut at 1280 px
    how_align = o1.selectbox("alignment of A to B", list(ALIGN_TEXT), key="transport-align", format_func=ALIGN_TEXT.get)
    alphas = o2.text_input("α values", "0,0.5,1,1.5,2", key="transport-alpha")
    data_task = data_field(o3, "fine-tune task data", own_data(ref_ft), key=f"transport-task:{ref_ft}")
    data_base = data_field(o4, "original task data", own_data(ref_a), key=f"transport-base:{ref_a}")
    strategy, per_block = "circuit", False
    if how_align != "none":
        h1, h2 = st.columns([2, 1])
        strategy = h1.selectbox("how heads are paired (TransFusion, Table 3)", list(HEAD_STRATEGY_TEXT),
                                key="transport-head-strategy", format_func=HEAD_STRATEGY_TEXT.get,
                                help=HEAD_STRATEGY_HELP)
        per_block = h2.checkbox("residual per block (TransFusion)", False, key="transport-per-block",
                                help="TransFusion's eq. 12: after the alignment, one permutation per residual stream "
                                     "from the weights, in place of one for the whole stream (moves the task "
                                     "vector; not a symmetry of the model)")
    background = st.checkbox("run in the background", True, key="transport-background",
                             help="a job in a worker process: it goes on when you leave this page (see Jobs)")
    if st.button("Transport", type="primary", key="transport-go"):
        values = parse_alphas(alphas)
        st.session_state.pop("transport-last", None)
        if background:
            check_transport(cached_model(ref_a), cached_model(ref_ft), cached_model(ref_b), values, how_align,
                            per_block)
            request = {"a": ref_a, "a_ft": ref_ft, "b": ref_b, "alphas": values, "align": how_align,
                       "data_task": data_task or None, "data_base": data_base or None, "head_strategy": strategy,
                       "residual_per_block": per_block}
            st.session_state["transport-last-job"] = submit_job("transport", request,
                                                                label=f"transport ({how_align}): {ref_ft} → {ref_b}")
        else:
            with heavy_work("the transport"):
                bar = StreamlitProgress("transporting…")
                run = transport_run(ref_a, ref_ft, ref_b, values, data_task or None, data_base or None,
                                    how_align, store=run_store(), source="app", progress=bar,
                                    alignment=head_strategy_alignment(how_align, strategy, data_base or None),
                                    residual_per_block=per_block)
                bar.done()
            st.session_state["transport-last"] = [run.run_id]
    resume_job(("transport",), "transport-last")
    if "transport-last-job" in st.session_state:
        follow_job(st.session_state["transport-last-job"], "transport-last")
    if st.session_state.get("transport-last"):
        run = run_store().get(st.session_state["transport-last"][0])
        m = run.metrics
        st.subheader(run_label(run))
        show_figure(transport_figure(m["alpha"], m["task_loss"], m["base_loss"],
                                         title=f"best α = {m['best_alpha']:g} (lowest fine-tune task loss)"),
                        key="transport-fig")
        if m.get("base_accuracy"):  # the support set beside the task (TransFusion's two columns)
            st.dataframe(pd.DataFrame({"α": m["alpha"], "task accuracy": m["task_accuracy"],
                                       "support (original task) accuracy": m["base_accuracy"]}),
                         hide_index=True, key="transport-accuracy")
        download(run, "transported", "transport-download")


st.title("Merge & transport")
merge_tab, transport_tab = st.tabs(["Merge models", "Carry a fine-tune over"])
with merge_tab, user_errors():
    merge_section()
with transport_tab, user_errors():
    transport_section()
