"""Recorded workflows shared by the CLI and the app: each one writes a run row when it starts
and its metrics (or its error) when it ends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from symalign.barrier import default_data_spec
from symalign.data import load_data
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.interpolation import Curve, interpolation_curve
from symalign.match.align import Alignment, align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model
from symalign.models.compat import check_compatible
from symalign.models.family import TransformerModel
from symalign.models.io import export_dtype
from symalign.models.widen import check_pair, same_widths
from symalign.progress import PhaseProgress, phase
from symalign.runs.records import (
    SETTINGS,
    AlignSettings,
    BarrierSettings,
    ManySettings,
    MergeSettings,
    Settings,
    SimplexSettings,
    SpectrumSettings,
    TransportSettings,
)
from symalign.runs.store import RunStore
from symalign.zoo import zoo_reference

if TYPE_CHECKING:
    from symalign.match.universe import UniverseAlignment
    from symalign.merge import MergeResult, Transport

ModelLike = TransformerModel | str | Path


@dataclass
class AlignRun:
    run_id: str | None
    alignment: Alignment
    curve: Curve | None
    out: Path


def _model(m: ModelLike) -> TransformerModel:
    return load_model(m) if isinstance(m, (str, Path)) else m


def _loaded_here(m: ModelLike) -> bool:
    """A model the workflow loads itself from a path: nobody else holds it, so it may be consumed."""
    return isinstance(m, (str, Path))


def _ref(m: ModelLike) -> str:
    """How the history names a model: as the user wrote it, or zoo:RECIPE/SEED for a zoo model."""
    if isinstance(m, (str, Path)):
        return str(m)
    return zoo_reference(m.source) if m.source else "(in memory)"


def failure_message(exc: BaseException) -> str:
    """One line for the run history: the user error as said, or what stopped the work."""
    if isinstance(exc, SymalignError):
        return str(exc)
    if isinstance(exc, Exception):
        return f"{type(exc).__name__}: {exc}"
    return "interrupted before it finished"  # Ctrl-C, or the app stopping or rerunning its script


@dataclass
class Recording:
    """A run being recorded: its id (None without a store), where its artifacts go, and its finish.
    Workflows write through it instead of checking for a store at each step."""

    store: RunStore | None
    id: str | None

    def folder(self, out: str | Path | None) -> Path:
        """`out` as given, else the data folder's runs/<id> (deleted with the run)."""
        if out is not None:
            return Path(out)
        from symalign.workspace import runs_dir

        return runs_dir() / (self.id or "latest")

    def finish(self, metrics: dict, artifacts: str | Path | None = None) -> None:
        if self.store is not None:
            self.store.finish(self.id, metrics, artifacts)


@contextmanager
def recorded(store: RunStore | None, kind: str, a: str, b: str, method: str, settings: Settings, source: str,
             label: str, models: list[str] | None = None) -> Iterator[Recording]:
    """Start a run row with its kind's typed settings (runs.records), and mark it failed (with one
    line) if the work raises or is stopped."""
    if not isinstance(settings, SETTINGS[kind]):
        raise TypeError(f"a {kind} run records {SETTINGS[kind].__name__}, not {type(settings).__name__}")
    if store is None:
        yield Recording(None, None)
        return
    run_id = store.start(kind, a, b, method, settings.to_json(), source, label, models)
    try:
        yield Recording(store, run_id)
    except BaseException as exc:  # also Streamlit's stop/rerun, which would leave the row `running`
        store.fail(run_id, failure_message(exc))
        raise


def curve_metrics(curve: Curve) -> dict:
    return {"barrier": curve.barrier, "barrier_mean": curve.barrier_mean, "endpoint_loss": curve.endpoint_loss,
            "curve": curve.to_json()}


def measured_curve(pair: list[TransformerModel], spec: str, data_source, points: int,
                   max_examples: int | None, device: str, form: str, progress: PhaseProgress | None,
                   names: tuple[str, str], consume: tuple[bool, bool] = (False, False)) -> Curve:
    """The interpolation curve the recorded workflows measure, labelled with its endpoints and data.
    The two models are taken out of `pair`, so that a caller that keeps no other reference lets the
    curve free each raw model once its parameters are built (real checkpoints: memory); `consume`
    says which of them nobody else holds at all (interpolation_curve may use their memory)."""
    curve = interpolation_curve(pair.pop(0), pair.pop(0), data_source or load_data(spec), points=points,
                                max_examples=max_examples, device=pick_device(device), form=form,
                                progress=phase(progress, "interpolate"), consume=consume)
    curve.extra.update({"a": names[0], "b": names[1], "data": spec})
    return curve


def barrier_run(a: ModelLike, b: ModelLike, data: str | None = None, points: int = 21,
                max_examples: int | None = None, device: str = "auto", form: str = "canonical",
                store: RunStore | None = None, source: str = "api", label: str = "",
                progress: PhaseProgress | None = None, data_source=None) -> tuple[str | None, Curve]:
    """The vanilla (or as-given) barrier between two models, recorded as a `barrier` run."""
    pair = [_model(a), _model(b)]
    spec = data or default_data_spec(pair[0])
    settings = BarrierSettings(spec, points, max_examples, device, form)
    with recorded(store, "barrier", _ref(a), _ref(b), "none", settings, source, label) as run:
        curve = measured_curve(pair, spec, data_source, points, max_examples, device, form, progress,
                               (_ref(a), _ref(b)), consume=(_loaded_here(a), _loaded_here(b)))
        run.finish(curve_metrics(curve))
    return run.id, curve


def align_summary(alignment: Alignment) -> dict:
    r = alignment.report
    out = {"distance_before": r["distance_before"], "distance_after": r["distance_after"],
           "sweeps": max([h["sweep"] for h in r["sweeps"]] or [0]), "learned_steps": len(r["learned"]),
           "function_gap_vs_b": r["function_gap_vs_b"], "seconds": r["seconds"]}
    if r["sweeps"] and "stopped" in r["sweeps"][-1]:  # weight matching (also the learned start): why it ended
        out["stopped"] = r["sweeps"][-1]["stopped"]
    if r.get("widths"):  # a narrower model was embedded in the wider one's basis
        out["widths"] = r["widths"]
    return out


def align_run(a: ModelLike, b: ModelLike, config: AlignConfig, out: str | Path | None = None,
              measure: bool = True, points: int = 21, max_examples: int | None = None,
              store: RunStore | None = None, source: str = "api", label: str = "",
              progress: PhaseProgress | None = None, data_source=None,
              canonical_a: str | Path | None = None) -> AlignRun:
    """Align B to A, save the result, and (by default) measure the barrier between A and aligned B.

    Without `out`, artifacts go to the data folder's runs/<id> (and are deleted with the run).
    `canonical_a`: also write A's canonical form there, the basis aligned B is in (for a merger)."""
    model_a, model_b = _model(a), _model(b)
    check_pair(model_a, model_b)
    if canonical_a is not None and not same_widths(model_a, model_b):
        raise SymalignError("--canonical-a: A and B differ in width, so aligned B is in an embedded basis, not A's")
    if same_widths(model_a, model_b):  # align() and the curve take canonical forms; the raw ones can go now
        # one at a time, and a model loaded here is folded tensor by tensor into its canonical form
        # (each raw tensor let go as it is read: real checkpoints never hold raw and canonical at once)
        model_a = canonicalize(model_a, consume=_loaded_here(a))
        if canonical_a is not None:
            from symalign.models import save_model

            save_model(model_a, canonical_a, config.dtype)
        model_b = canonicalize(model_b, consume=_loaded_here(b))
    config = fitted(model_a, config)
    settings = AlignSettings(config.to_json(), points, max_examples, measure, owns_artifacts=out is None)
    with recorded(store, "align", _ref(a), _ref(b), config.method, settings, source, label) as run:
        handed = [model_b]  # handed over: align() frees B once it is transformed (real checkpoints: memory)
        del model_b
        alignment = align(model_a, handed.pop(), config, progress=phase(progress, "align"),
                          consume_b=_loaded_here(b))
        spec = (config.data or default_data_spec(model_a)) if measure else None
        pair = [model_a, alignment.aligned] if measure else []
        del model_a  # A's copy goes before the export unless the curve needs it (real checkpoints: 4 B/param)
        out = run.folder(out)
        saved = alignment.save(out)
        curve = None
        metrics = align_summary(alignment)
        metrics["classes"] = config.classes
        if measure:
            curve = measured_curve(pair, spec, data_source, points, max_examples,  # aligned B is the caller's
                                   config.device, "canonical", progress, (_ref(a), str(saved)),
                                   consume=(_loaded_here(a), False))
            metrics.update(curve_metrics(curve))
        run.finish(metrics, saved)
    return AlignRun(run.id, alignment, curve, saved)



def align_then_vanilla(a: ModelLike, b: ModelLike, config: AlignConfig, with_vanilla: bool = True, points: int = 21,
                       max_examples: int | None = None, store: RunStore | None = None, source: str = "api",
                       label: str = "", progress: PhaseProgress | None = None, data_source=None,
                       reuse: bool = False) -> list[str | None]:
    """The Align page's run: the alignment with its barrier, then (`with_vanilla`) the vanilla barrier
    of the same pair on the same data and points, so the two curves compare like with like. One
    workflow for the page and its background job. Returns the run ids, the alignment's first.
    `reuse`: an identical earlier request (same model files, settings, seed) is answered with its
    runs, and identical requests at once compute once (symalign.runs.reuse); pass models as loaded."""
    from symalign.runs.reuse import answered

    def compute() -> list[str | None]:
        ids = [align_run(a, b, config, points=points, max_examples=max_examples, store=store, source=source,
                         label=label, progress=progress, data_source=data_source).run_id]
        if with_vanilla:
            ids.append(barrier_run(a, b, data=config.data, points=points, max_examples=max_examples,
                                   device=config.device, store=store, source=source, label=label, progress=progress,
                                   data_source=data_source)[0])
        return ids

    settings = {"config": config.to_json(), "with_vanilla": with_vanilla, "points": points,
                "max_examples": max_examples, "label": label}
    return answered(store, reuse, "align-then-vanilla", [a, b], settings, compute)


def check_classes(model: TransformerModel, classes: dict[str, str]) -> None:
    """Refuse an inadmissible class (with the spec's reason) before a run is recorded. Matchers
    work in canonical form, so that is the spec that decides."""
    model.family.spec(model.config, canonical=True).check_classes(classes)


def fitted(model: TransformerModel, config: AlignConfig) -> AlignConfig:
    """The config on this model (a preset fitted to its spec, every class checked) before a run is recorded."""
    return config.for_spec(model.family.spec(model.config, canonical=True))


def _three_or_more(refs: list[ModelLike], what: str, exactly: int | None = None) -> list[TransformerModel]:
    """Load the models of a multi-model workflow and refuse a wrong count or mismatched
    architectures before anything is recorded or computed."""
    if exactly is not None and len(refs) != exactly:
        raise SymalignError(f"{what} needs exactly {exactly} models (got {len(refs)})")
    if len(refs) < 3:
        raise SymalignError(f"{what} needs at least three models (got {len(refs)}); for two use `symalign align`")
    models = [_model(m) for m in refs]
    for i, other in enumerate(models[1:], start=2):
        try:
            check_compatible(models[0], other)
        except SymalignError as exc:
            raise type(exc)(f"model 1 and model {i} cannot be aligned: {exc}") from None
    return models


@dataclass
class ManyRun:
    run_id: str | None
    universe: UniverseAlignment
    curves: list[tuple[tuple[int, int], Curve]]
    outputs: list[Path]


def align_many_run(refs: list[ModelLike], config: AlignConfig, out: str | Path | None = None, measure: bool = False,
                   points: int = 21, max_examples: int | None = None, store: RunStore | None = None,
                   source: str = "api", label: str = "", progress: PhaseProgress | None = None,
                   data_source=None) -> ManyRun:
    """Universe alignment of three or more models, saved to DIR/0, DIR/1, ...; optionally the barrier
    of every pair of aligned models. Without `out`, artifacts go to the data folder's runs/<id>."""
    from itertools import combinations

    from symalign.match.universe import align_many

    models = _three_or_more(refs, "align-many")
    config = fitted(models[0], config)
    names = [_ref(m) for m in refs]
    settings = ManySettings(config.to_json(), points, max_examples, measure, owns_artifacts=out is None)
    with recorded(store, "align-many", names[0], names[1], config.method, settings, source, label, names) as run:
        universe = align_many(models, config, progress=phase(progress, "align"))
        out = run.folder(out)
        outputs = universe.save(out)
        metrics = {"classes": config.classes, "seconds": universe.report["seconds"],
                   "function_gap": [m["function_gap"] for m in universe.report["members"]],
                   "pairwise_distance_before": universe.report["pairwise_distance_before"],
                   "pairwise_distance_after": universe.report["pairwise_distance_after"],
                   "learned_steps": universe.report["learned_summary"].get("steps", 0),
                   "outputs": [str(o) for o in outputs]}
        curves = []
        if measure:
            spec = config.data or default_data_spec(models[0])
            for i, j in combinations(range(len(models)), 2):
                curve = measured_curve([universe.aligned[i], universe.aligned[j]], spec, data_source, points,
                                       max_examples,
                                       config.device, "canonical", progress, (names[i], names[j]))
                curves.append(((i, j), curve))
            metrics["pairwise"] = [{"pair": list(p), "barrier": c.barrier, "barrier_mean": c.barrier_mean,
                                    "curve": c.to_json()} for p, c in curves]
        run.finish(metrics, out)
    return ManyRun(run.id, universe, curves, outputs)


def simplex_run(refs: list[ModelLike], config: AlignConfig, resolution: int = 10, epsilon: float = 0.05,
                max_examples: int | None = None, store: RunStore | None = None, source: str = "api",
                label: str = "", progress: PhaseProgress | None = None, data_source=None):
    """The loss surface over the simplex of three models after their universe alignment (or none)."""
    from symalign.landscape.simplex import barycentric_grid, simplex_surface
    from symalign.match.matchers import matcher, method_names
    from symalign.match.universe import align_many

    if not matcher(config.method).universe:
        raise SymalignError(f"simplex supports --method {', '.join(method_names(universe=True))}; "
                            f"got {config.method!r}")
    barycentric_grid(resolution)  # refuse a bad resolution before loading anything
    if not epsilon >= 0:
        raise SymalignError(f"--epsilon must be 0 or more; got {epsilon}")
    models = _three_or_more(refs, "simplex", exactly=3)
    config = fitted(models[0], config)
    names = [_ref(m) for m in refs]
    spec = config.data or default_data_spec(models[0])
    settings = SimplexSettings(config.to_json(), spec, resolution, epsilon, max_examples)
    with recorded(store, "simplex", names[0], names[1], config.method, settings, source, label, names) as run:
        aligned = align_many(models, config, progress=phase(progress, "align")).aligned
        surface = simplex_surface(*aligned, data_source or load_data(spec), resolution=resolution, epsilon=epsilon,
                                  max_examples=max_examples, device=pick_device(config.device),
                                  progress=phase(progress, "simplex"))
        surface.extra.update({"method": config.method, "classes": config.classes, "models": names, "data": spec})
        run.finish(dict(surface.to_json(), barrier=surface.max_barrier))
    return run.id, surface


def spectrum_run(directory: str | Path, store: RunStore | None = None, source: str = "api", label: str = "",
                 run: str | None = None) -> tuple[str | None, dict]:
    """Eigen-angle spectra of a saved learned alignment, recorded as a `spectrum` run."""
    from symalign.landscape.spectrum import alignment_spectrum

    result = alignment_spectrum(directory)  # refuse a directory without learned rotations before recording
    record = Path(directory) / "alignment.json"
    config = json.loads(record.read_text()) if record.is_file() else {}
    models = config.get("models") or [config.get("a", ""), config.get("b", str(directory))]
    models = [zoo_reference(m) if m else m for m in models]
    settings = SpectrumSettings(str(directory), run)
    with recorded(store, "spectrum", models[0], models[1] if len(models) > 1 else "", result.get("method") or "",
                  settings, source, label, models) as run:
        run.finish(result, directory)
    return run.id, result


@dataclass
class MergeRun:
    run_id: str | None
    result: MergeResult
    out: Path


def merge_run(refs: list[ModelLike], how_align: str = "weight", how: str = "average", data: str | None = None,
              examples: int = 64, max_examples: int | None = None, seed: int = 0, out: str | Path | None = None,
              store: RunStore | None = None, source: str = "api", label: str = "",
              progress: PhaseProgress | None = None, dtype: str = "auto", device: str = "auto",
              base: ModelLike | None = None, parameters: dict | None = None, export_inputs: bool = False) -> MergeRun:
    """Merge models (symalign.merge), save the checkpoint and record a `merge` run with the inputs'
    and merged model's evaluation metrics. Without `out`, the checkpoint goes to runs/<id>. `base`:
    for the rules that need one (it leads: the others are aligned into its basis); `parameters`: the
    rule's; `export_inputs`: also write the aligned inputs and a mergekit.yml (MergeResult.export_inputs)."""
    from symalign.merge.merging import check_rule, merge_models

    refs = ([base] if base is not None else []) + list(refs)
    if len(refs) < 2:
        raise SymalignError(f"merge needs at least two models (got {len(refs)})")
    check_rule(how, len(refs), base is not None, parameters)  # before any model loads
    models = [_model(m) for m in refs]
    for other in models[1:]:
        check_compatible(models[0], other)
    spec = data or default_data_spec(models[0])
    names = [_ref(m) for m in refs]
    export_dtype(models[0], dtype)  # an unknown dtype is refused before any work
    settings = MergeSettings(how_align, how, spec, examples, max_examples, seed, owns_artifacts=out is None,
                             dtype=dtype,
                             device=device, base=names[0] if base is not None else None, parameters=parameters or {})
    with recorded(store, "merge", names[0], names[1], how_align, settings, source, label, names) as run:
        result = merge_models(models[1:] if base is not None else models, how_align, how, spec, examples=examples,
                              max_examples=max_examples, seed=seed, progress=progress, device=device,
                              base=models[0] if base is not None else None, parameters=parameters,
                              keep_members=export_inputs)
        out = run.folder(out)
        saved = result.save(out, dtype)
        if export_inputs:
            result.export_inputs(saved)
        run.finish({"how": how, "align": how_align, "parameters": result.report["parameters"],
                    "base": result.report["base"], "inputs": result.report["inputs"],
                    "merged": result.report["merged"]}, saved)
    return MergeRun(run.id, result, saved)


@dataclass
class TransportRun:
    run_id: str | None
    result: Transport
    out: Path


def transport_run(a: ModelLike, a_ft: ModelLike, b: ModelLike, alphas: list[float], data_task: str | None = None,
                  data_base: str | None = None, how_align: str = "weight", max_examples: int | None = None,
                  seed: int = 0, out: str | Path | None = None, store: RunStore | None = None, source: str = "api",
                  label: str = "", progress: PhaseProgress | None = None, dtype: str = "auto",
                  device: str = "auto") -> TransportRun:
    """Task-vector transport (symalign.merge.task_vectors), the best-α checkpoint saved, recorded as a
    `transport` run (α, both losses, best α). Without `out`, the checkpoint goes to runs/<id>."""
    from symalign.merge.task_vectors import check_transport, transport

    model_a, model_ft, model_b = _model(a), _model(a_ft), _model(b)
    check_transport(model_a, model_ft, model_b, alphas, how_align)
    export_dtype(model_b, dtype)  # an unknown dtype is refused before any work
    data_task = data_task or default_data_spec(model_ft)
    data_base = data_base or default_data_spec(model_a)
    settings = TransportSettings(_ref(a_ft), how_align, alphas, data_task, data_base, max_examples, seed,
                                 owns_artifacts=out is None, dtype=dtype, device=device)
    names = [_ref(a), _ref(b), _ref(a_ft)]
    with recorded(store, "transport", names[0], names[1], how_align, settings, source, label, names) as run:
        result = transport(model_a, model_ft, model_b, alphas, data_task, data_base, how_align,
                           max_examples=max_examples, seed=seed, progress=progress, device=device)
        out = run.folder(out)
        saved = result.save(out, dtype)
        run.finish({k: result.report[k] for k in ("alpha", "task_loss", "base_loss", "task_accuracy", "best_alpha")},
                   saved)
    return TransportRun(run.id, result, saved)
