"""Recorded workflows shared by the CLI and the app: each one writes a run row when it starts
and its metrics (or its error) when it ends."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from symalign.barrier import default_data_spec
from symalign.data import load_data
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.interpolation import Curve, interpolation_curve
from symalign.match.align import Alignment, align
from symalign.match.config import AlignConfig
from symalign.models import load_model
from symalign.models.family import TransformerModel
from symalign.runs.store import RunStore
from symalign.zoo import zoo_reference

PhaseProgress = Callable[[str, int, int], None]  # phase, done, total
ModelLike = TransformerModel | str


@dataclass
class AlignRun:
    run_id: str | None
    alignment: Alignment
    curve: Curve | None
    out: Path


def _model(m: ModelLike) -> TransformerModel:
    return load_model(m) if isinstance(m, str) else m


def _ref(m: ModelLike) -> str:
    """How the history names a model: as the user wrote it, or zoo:RECIPE/SEED for a zoo model."""
    if isinstance(m, str):
        return m
    return zoo_reference(m.source) if m.source else "(in memory)"


def phase_progress(progress: PhaseProgress | None, phase: str):
    """A (done, total, ...) callback that reports to `progress` under the name of one phase."""
    return (lambda done, total, *_: progress(phase, done, total)) if progress else None


def failure_message(exc: BaseException) -> str:
    """One line for the run history: the user error as said, or what stopped the work."""
    if isinstance(exc, SymalignError):
        return str(exc)
    if isinstance(exc, Exception):
        return f"{type(exc).__name__}: {exc}"
    return "interrupted before it finished"  # Ctrl-C, or the app stopping or rerunning its script


@contextmanager
def recorded(store: RunStore | None, kind: str, a: str, b: str, method: str, settings: dict, source: str,
             label: str) -> Iterator[str | None]:
    """Start a run row, and mark it failed (with one line) if the work raises or is stopped."""
    if store is None:
        yield None
        return
    run_id = store.start(kind, a, b, method, settings, source, label)
    try:
        yield run_id
    except BaseException as exc:  # also Streamlit's stop/rerun, which would leave the row `running`
        store.fail(run_id, failure_message(exc))
        raise


def curve_metrics(curve: Curve) -> dict:
    return {"barrier": curve.barrier, "barrier_mean": curve.barrier_mean, "endpoint_loss": curve.endpoint_loss,
            "curve": curve.to_json()}


def measured_curve(model_a: TransformerModel, model_b: TransformerModel, spec: str, data_source, points: int,
                   max_examples: int | None, device: str, form: str, progress: PhaseProgress | None,
                   names: tuple[str, str]) -> Curve:
    """The interpolation curve both recorded workflows measure, labelled with its endpoints and data."""
    curve = interpolation_curve(model_a, model_b, data_source or load_data(spec), points=points,
                                max_examples=max_examples, device=pick_device(device), form=form,
                                progress=phase_progress(progress, "interpolate"))
    curve.extra.update({"a": names[0], "b": names[1], "data": spec})
    return curve


def barrier_run(a: ModelLike, b: ModelLike, data: str | None = None, points: int = 21,
                max_examples: int | None = None, device: str = "auto", form: str = "canonical",
                store: RunStore | None = None, source: str = "api", label: str = "",
                progress: PhaseProgress | None = None, data_source=None) -> tuple[str | None, Curve]:
    """The vanilla (or as-given) barrier between two models, recorded as a `barrier` run."""
    model_a, model_b = _model(a), _model(b)
    spec = data or default_data_spec(model_a)
    settings = {"data": spec, "points": points, "max_examples": max_examples, "device": device, "form": form}
    with recorded(store, "barrier", _ref(a), _ref(b), "none", settings, source, label) as run_id:
        curve = measured_curve(model_a, model_b, spec, data_source, points, max_examples, device, form, progress,
                               (_ref(a), _ref(b)))
        if store is not None:
            store.finish(run_id, curve_metrics(curve))
    return run_id, curve


def align_summary(alignment: Alignment) -> dict:
    r = alignment.report
    return {"distance_before": r["distance_before"], "distance_after": r["distance_after"],
            "sweeps": max([h["sweep"] for h in r["sweeps"]] or [0]), "learned_steps": len(r["learned"]),
            "function_gap_vs_b": r["function_gap_vs_b"], "seconds": r["seconds"]}


def align_run(a: ModelLike, b: ModelLike, config: AlignConfig, out: str | Path | None = None,
              measure: bool = True, points: int = 21, max_examples: int | None = None,
              store: RunStore | None = None, source: str = "api", label: str = "",
              progress: PhaseProgress | None = None, data_source=None) -> AlignRun:
    """Align B to A, save the result, and (by default) measure the barrier between A and aligned B.

    Without `out`, artifacts go to the data folder's runs/<id> (and are deleted with the run)."""
    model_a, model_b = _model(a), _model(b)
    settings = {"config": config.to_json(), "points": points, "max_examples": max_examples, "measure": measure,
                "owns_artifacts": out is None}
    with recorded(store, "align", _ref(a), _ref(b), config.method, settings, source, label) as run_id:
        alignment = align(model_a, model_b, config, progress=phase_progress(progress, "align"))
        if out is None:
            from symalign.workspace import runs_dir

            out = runs_dir() / (run_id or "latest")
        saved = alignment.save(out)
        curve = None
        metrics = align_summary(alignment)
        metrics["classes"] = config.classes
        if measure:
            spec = config.data or default_data_spec(model_a)
            curve = measured_curve(model_a, alignment.aligned, spec, data_source, points, max_examples,
                                   config.device, "canonical", progress, (_ref(a), str(saved)))
            metrics.update(curve_metrics(curve))
        if store is not None:
            store.finish(run_id, metrics, saved)
    return AlignRun(run_id, alignment, curve, saved)
