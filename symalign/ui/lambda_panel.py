"""Beside the λ slider: the model at λ at work, on the unaligned and the aligned path side by side
(symalign.landscape.at_lambda). Computed when asked and kept, so dragging back is instant."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from symalign.runs.store import Run
from symalign.runs.table import run_label

PROMPTS = {"causal-lm": "ROMEO:\nBut soft, what light", "masked-lm": "To be or not to b_, that is the question"}


@st.cache_resource(max_entries=4, show_spinner="loading the run's models…")
def _models(model_a: str, model_b: str, artifacts: str):
    """Canonical A, canonical B (the unaligned path) and the run's aligned B (already in A's basis);
    A and B come from the app's model cache, which the other pages share."""
    from symalign.models import canonicalize, load_model
    from symalign.ui.state import cached_model

    return canonicalize(cached_model(model_a)), canonicalize(cached_model(model_b)), load_model(artifacts)


@st.cache_resource(max_entries=128, show_spinner=False)
def _at_work(files: tuple[str, str, str], which: str, lam: float, prompt: str, example: int,
             data_spec: str | None):
    from symalign.data import load_data
    from symalign.landscape.at_lambda import at_work, blend

    a, b, aligned = _models(*files)
    data = load_data(data_spec) if data_spec else None
    return at_work(blend(a, aligned if which == "aligned" else b, lam), prompt, data, example)


def _label(name: str) -> str:
    return name.removeprefix("LABEL_")  # a model without class names: its index


def _show(col, work) -> None:
    if work.task == "causal-lm":
        col.code(work.shown, language=None, wrap_lines=True)
    elif work.task == "masked-lm":
        col.code(work.shown, language=None, wrap_lines=True)
        col.markdown("  \n".join(f"`{t!r}` {100 * p:.0f}%" for t, p in work.top))
    else:
        if work.image is not None:
            col.image(work.image.permute(1, 2, 0).numpy(), width=120, clamp=True)
        else:
            col.code(work.shown, language=None, wrap_lines=True)
        if work.truth is not None:
            right = work.top and work.top[0][0] == work.truth
            col.markdown(f"true label: **{_label(work.truth)}** ({'predicted' if right else 'missed'})")
        col.markdown("  \n".join(f"**{_label(t)}** {100 * p:.0f}%" if i == 0 else f"{_label(t)} {100 * p:.0f}%"
                                 for i, (t, p) in enumerate(work.top)))


def _lambda_from_link(value) -> float:
    """λ from a link's `lambda=` (0.5 when absent or not a number in [0, 1]), on the slider's 0.05 grid."""
    try:
        lam = float(value)
    except (TypeError, ValueError):
        return 0.5
    return round(min(1.0, max(0.0, lam)) * 20) / 20


def curves_at_lambda(runs: list[Run], labels: list[str], key: str, title: str, log_loss: bool = False) -> None:
    """The runs' curves with a λ slider: a marker on every curve, and below, in an expander titled
    `title`, the model at that λ at work (Interpolation and the guided demo)."""
    from symalign.plots import curves_figure
    from symalign.plots.interpolation import mark_lambda
    from symalign.ui.figures import show_figure
    from symalign.ui.permalink import initial

    lam = st.slider("λ: move along the path", 0.0, 1.0, _lambda_from_link(initial(f"{key}-lambda", "lambda")), 0.05,
                    key=f"{key}-lambda", help="the marker on every curve, and the model at this λ below (the page's "
                                              "link keeps it)")
    figure = curves_figure(list(zip(labels, [r.curve for r in runs])), methods=[r.method for r in runs],
                           log_loss=log_loss)
    mark_lambda(figure, lam)
    show_figure(figure, key=f"{key}-fig")
    with st.expander(title, expanded=True):
        show_at_lambda(runs, lam, key=f"{key}-at")


def show_at_lambda(runs: list[Run], lam: float, key: str) -> None:
    """The model at λ for one of `runs` (alignment runs that kept their files), unaligned and aligned."""
    usable = [r for r in runs if r.kind == "align" and r.artifacts and Path(r.artifacts, "config.json").is_file()]
    if not usable:
        st.caption("The model at λ is shown for alignment runs whose aligned model is kept (Align, the guided demo).")
        return
    usable.sort(key=lambda r: r.method != "learned")  # learned first: the path that closes most (issue #56)
    labels = {r.id: run_label(r) for r in usable}
    chosen = st.selectbox("show the model at λ of", list(labels), format_func=labels.get, key=f"{key}-run")
    run = next(r for r in usable if r.id == chosen)
    files = (run.model_a, run.model_b, run.artifacts)
    a = _models(*files)[0]
    task = a.family.task
    prompt, example, data_spec = "", 0, None
    if task in PROMPTS:
        prompt = st.text_area("prompt" if task == "causal-lm" else "text with a _ to fill in", PROMPTS[task],
                              height=80, key=f"{key}-prompt-{task}")
    else:
        from symalign.models.io import default_data_spec

        data_spec = (run.settings.get("config") or {}).get("data") or default_data_spec(a)
        example = int(st.number_input("evaluation example", 0, 255, 0, key=f"{key}-example"))
    left, right = st.columns(2)
    from symalign.runs.unaligned import looked_for

    twin = _vanilla_twin(run)
    curves = {"unaligned": twin.curve if twin else None, "aligned": run.curve}
    for col, which, title in ((left, "unaligned", "unaligned path"), (right, "aligned", f"aligned ({run.method})")):
        col.markdown(f"**{title}, λ = {lam:.2f}**")
        _measured(col, curves[which], lam, looked_for(run) if which == "unaligned" else None)
        _show(col, _at_work(files, which, round(lam, 4), prompt, example, data_spec))


def _vanilla_twin(run: Run) -> Run | None:
    """The unaligned path's run: a barrier run of the pair (Align records one) or a grid's vanilla cell."""
    from symalign.runs.unaligned import vanilla_twin
    from symalign.ui.state import run_store

    return vanilla_twin(run, run_store().list(model=run.model_a))


def _measured(col, curve: dict | None, lam: float, missing: str | None = None) -> None:
    """Loss and accuracy of the path's model at the measured λ nearest the slider (whole evaluation split)."""
    from symalign.landscape.at_lambda import point_on_curve

    if not curve:
        col.caption(missing or "no measured curve for this path in the run history")
        return
    at, loss, accuracy = point_on_curve(curve, lam)
    col.caption(f"on the evaluation split at λ = {at:.2f}: loss {loss:.3f}"
                + (f", accuracy {100 * accuracy:.1f}%" if accuracy is not None else ""))
