"""Symmetries: what a symmetry does to the weights, for teaching. The science is in
symalign.symmetry_anatomy; this page only draws it."""

import pandas as pd
import streamlit as st

from symalign.errors import SymalignError
from symalign.models import canonicalize, load_model, random_inputs
from symalign.models.io import default_data_spec
from symalign.models.widen import match_widths
from symalign.plots import action_figure, heatmaps_figure
from symalign.runs.table import run_label
from symalign.symmetry.spec import KINDS
from symalign.symmetry_anatomy import (
    action_grid,
    admissible_classes,
    as_matrix,
    class_table,
    plant,
    predictions,
    refusal_lines,
    tensors_touched,
)
from symalign.ui.figures import show_figure
from symalign.ui.state import cached_canonical_spec, cached_data, cached_model, run_store
from symalign.ui.widgets import CLASS_LABELS, KIND_LABELS, model_picker, user_errors

st.title("What a symmetry does to the weights")
st.markdown("A parameter symmetry changes the weights without changing the function. Below: which weights each "
            "component's symmetry acts on (and which classes are refused, with the reason), a symmetry planted in a "
            "trained model — the weight matrices visibly shuffle or rotate while the predictions stay put — and, for "
            "an alignment you ran, the weights of A, B and B brought into A's basis.")

ref = model_picker("model", "sym-model", default_ref="zoo:vit-digits/0")


def example_inputs(model):
    """A few evaluation examples of the model's own data (with targets), or random inputs without."""
    try:
        data = cached_data(default_data_spec(model))
        inputs, targets = next(iter(data.eval_batches(model, max_examples=6, batch_size=6)))
        return inputs, (targets[:, -1] if targets.dim() == 2 else targets).tolist()
    except SymalignError:
        return random_inputs(model, n=6), None


with user_errors():
    if not ref:
        st.info("Pick a model (or type a directory path).")
        st.stop()
    model = cached_model(ref)
    spec = cached_canonical_spec(ref)
    layers = sorted({int(s.split(".")[1]) for s in spec.spaces if s.startswith("layer.")})
    spec_tab, plant_tab, align_tab = st.tabs(["The symmetry spec", "Plant a symmetry", "An alignment's weights"])

    with spec_tab:
        names, cells = action_grid(spec, layer=0)
        rotations = "orthogonal" not in spec.spaces["residual"].refusals
        st.markdown(f"How each component's group element G reaches the tensors of a {spec.family} model "
                    "(embeddings, head and layer 0; every layer looks like layer 0). "
                    + ("In canonical form the norm gains are absorbed, so the residual admits rotations."
                       if rotations else "Here the residual admits permutations only (why: below the grid)."))
        show_figure(action_figure(names, list(KINDS), cells), key="sym-grid")
        st.markdown("**Classes per component**: *admissible*, or refused, with why the class would change the "
                    "function below the grid (a reason is a sentence: in a grid cell it would be cut off).")
        classes = pd.DataFrame(class_table(spec)).set_index("component")
        st.dataframe(classes.map(lambda v: v if v == "admissible" else "refused"), key="sym-classes")
        st.markdown("\n".join(f"- {line}" for line in refusal_lines(spec)))

    with plant_tab:
        c1, c2, c3, c4 = st.columns(4)
        kind = c1.selectbox("component", list(KINDS), key="sym-kind", format_func=KIND_LABELS.get)
        cls = c2.selectbox("class", admissible_classes(spec, kind), key=f"sym-class-{kind}",
                           format_func=CLASS_LABELS.get)
        layer = c3.selectbox("layer", layers, key="sym-layer")
        seed = c4.number_input("seed", 0, 1_000_000, 0, key="sym-seed")
        planted = plant(model, kind, cls, seed=int(seed))
        touched = tensors_touched(spec, kind, layer)
        tensor = st.selectbox("tensor to look at", touched, key=f"sym-tensor-{kind}-{layer}")
        m1, m2, m3 = st.columns(3)
        m1.metric("this tensor moved (relative)", f"{100 * planted.moved(tensor):.0f}%")
        m2.metric("all weights moved (relative)", f"{100 * planted.weight_change:.0f}%")
        m3.metric("max |Δ logit|, A vs T(A)", f"{planted.function_gap:.1e}", help="the same function: float error")
        show_figure(heatmaps_figure([("A (canonical form)", as_matrix(planted.original.tensors[tensor]).tolist()),
                                         (f"T(A): {CLASS_LABELS[cls]} on {KIND_LABELS[kind]}",
                                          as_matrix(planted.planted.tensors[tensor]).tolist())], title=tensor),
                        key="sym-plant-fig")
        inputs, targets = example_inputs(model)
        index_a, p_a = predictions(planted.original, inputs)
        index_t, p_t = predictions(planted.planted, inputs)
        table = pd.DataFrame({"A predicts": index_a.tolist(), "A's probability": p_a.tolist(),
                              "T(A) predicts": index_t.tolist(), "T(A)'s probability": p_t.tolist()})
        if targets is not None:
            table.insert(0, "target", targets)
        st.markdown("**Predictions on a few examples** (for text: the next character, as a token id): unchanged.")
        st.dataframe(table, key="sym-predictions")
        st.session_state["sym-planted"] = {"tensor": tensor, "moved": planted.moved(tensor),
                                           "function_gap": planted.function_gap,
                                           "same_predictions": bool((index_a == index_t).all())}

    with align_tab:
        runs = [r for r in run_store().list(kind="align") if r.state == "done" and r.artifacts]
        if not runs:
            st.info("No alignment runs yet: run one on the Align page (or `symalign align A B`), then look at "
                    "its weights here.")
            st.stop()
        by_id = {r.id: r for r in runs}
        run = by_id[st.selectbox("alignment run", list(by_id), key="sym-run",
                                 format_func=lambda i: run_label(by_id[i]))]
        a, b, widths = match_widths(cached_model(run.model_a), cached_model(run.model_b))
        a, b = canonicalize(a), canonicalize(b)
        if widths:
            st.caption(f"Model {widths['embedded'].upper()} is the narrower one, shown embedded in the wider "
                       "basis (its new units and heads are the empty rows and columns).")
        aligned = canonicalize(load_model(run.artifacts))
        a1, a2 = st.columns(2)
        run_layer = a1.selectbox("layer", sorted({int(n.split(".")[1]) for n in a.tensors if n.startswith("layer.")}),
                                 key="sym-run-layer")
        choices = [n for n in a.tensors if n.startswith(f"layer.{run_layer}.") and a.tensors[n].dim() >= 2]
        tensor = a2.selectbox("tensor", choices, key=f"sym-run-tensor-{run_layer}")
        show_figure(heatmaps_figure([("A", as_matrix(a.tensors[tensor]).tolist()),
                                         ("B", as_matrix(b.tensors[tensor]).tolist()),
                                         (f"B aligned to A ({run.method})",
                                          as_matrix(aligned.tensors[tensor]).tolist())],
                                        title=tensor), key="sym-align-fig")
        st.caption("Aligned B computes exactly what B computes; where the matcher found the symmetry, its weights look "
                   "like A's (the same stripes in the same places) rather than like B's.")
