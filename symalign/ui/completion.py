"""What the user's own models still need before they can be measured, with the way on beside each need:
take a tokenizer from a model that has one, record the data the model is measured on (issue #109: an
upload without a tokenizer was "in every model picker", and its first run failed 13 s in)."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from symalign.errors import SymalignError
from symalign.models.readiness import TEXT_TASKS, adopt_tokenizer, has_tokenizer, readiness, record_data
from symalign.ui.session import access, offered_models, own_models
from symalign.ui.state import cached_model
from symalign.ui.widgets import data_field, user_errors
from symalign.workspace import available_models


def completable_models() -> list[tuple[str, str]]:
    """(label, reference) of the models this visitor may complete: their uploads, and for the host the
    models imported or trained into the data folder (never the zoo, never a linked folder: read in place)."""
    yours = [] if access().guest else [(e.label, e.ref) for e in available_models() if e.origin == "yours"]
    return yours + own_models()


def import_message(refs: list[str]) -> list[str]:
    """Per imported model: what it can do now and what it cannot yet (the Models page's import message)."""
    lines = []
    for ref in refs:
        model = cached_model(ref)
        lines += [f"**{model.source.rsplit('/', 1)[-1]}**: " + " ".join(readiness(model).lines())]
    return lines


def _tokenizer_donors(model) -> dict[str, str]:
    """label -> ref of the models offered here whose tokenizer could serve `model` (a text model with one)."""
    donors = {}
    for label, ref in offered_models():
        try:
            other = cached_model(ref)
        except SymalignError:
            continue
        if other.family.task in TEXT_TASKS and has_tokenizer(other) and other.config.vocab_size <= \
                model.config.vocab_size:
            donors[label] = (other.family.task != model.family.task, ref)
    return {label: ref for label, (_, ref) in sorted(donors.items(), key=lambda item: item[1][0])}  # same task first


def what_models_need() -> None:
    """One panel per own model that cannot be measured yet, with its ways on."""
    if "need-said" in st.session_state:  # what the last click did (its model may need nothing more now)
        st.success(st.session_state.pop("need-said"))
    needy = []
    for label, ref in completable_models():
        try:
            model = cached_model(ref)
        except SymalignError:
            continue  # the table above says why it cannot load
        found = readiness(model)
        if not found.ready and "task" not in found.missing:
            needy.append((label, ref, model, found))
    if not needy:
        return
    st.subheader("What your models still need")
    st.caption("Weight matching needs nothing more; barriers, activation and learned matching need the data the "
               "model is measured on, and text models their tokenizer.")
    for label, ref, model, found in needy:
        with st.container(border=True, key="need-" + re.sub(r"[^A-Za-z0-9_-]", "-", Path(ref).name)):
            st.markdown(f"**{label}**: {found.reason()}")
            if "tokenizer" in found.missing:
                donors = _tokenizer_donors(model)
                if not donors:
                    st.caption("No model here has a tokenizer that fits its vocabulary: upload the model again "
                               "with tokenizer.json.")
                else:
                    c1, c2 = st.columns([3, 1])
                    donor = c1.selectbox("take the tokenizer of", list(donors), key=f"need-donor:{ref}")
                    if c2.button("Take it", key=f"need-donor-go:{ref}"):
                        with user_errors():
                            copied = adopt_tokenizer(model, cached_model(donors[donor]))
                            st.session_state["need-said"] = f"{label}: took {', '.join(copied)} from {donor}."
                            st.rerun()
            if "data" in found.missing:
                c1, c2 = st.columns([3, 1])
                spec = data_field(c1, "the data it is measured on", "", key=f"need-data:{ref}")
                if c2.button("Record it", key=f"need-data-go:{ref}", disabled=not spec.strip()):
                    with user_errors():
                        record_data(model, spec.strip())
                        st.session_state["need-said"] = f"{label}: its data is now {spec.strip()}."
                        st.rerun()
