"""Beyond the straight line, as recorded workflows: a fitted curve between two models (beside the
straight line before and after alignment) and the loss plane the paths lie in.

A curve's folder holds everything needed to walk it again: `a/` and `b/` (its endpoints in the
parametrisation it was fitted in: A's canonical form, and B canonical or aligned to A), `bend/`
(the fitted control point, a standard checkpoint), `curve.json`, and `t-0.50/`-style checkpoints
for each `--export-at`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from symalign.data import load_data
from symalign.data.splits import split_view
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.json_files import read_json_object
from symalign.landscape.curve import FittedCurve, curve_loss, fit_bend, model_at
from symalign.landscape.curve_options import CurveOptions
from symalign.landscape.interpolation import Curve, interpolation_curve
from symalign.landscape.plane import Plane, curve_path, random_plane, three_point_plane
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model, save_model
from symalign.models.compat import check_compatible
from symalign.models.family import TransformerModel
from symalign.models.io import default_data_spec
from symalign.progress import PhaseProgress, phase
from symalign.runs.recording import ModelLike, model_of, recorded, reference
from symalign.runs.settings import CurveSettings, PlaneSettings
from symalign.runs.store import RunStore
from symalign.workflows.execute import fitted


@dataclass
class CurveRun:
    run_id: str | None
    line: Curve  # the straight line between A and B as given (canonical forms)
    aligned_line: Curve | None  # the straight line between A and aligned B (None: no alignment)
    fit: FittedCurve
    out: Path
    summary: dict = field(default_factory=dict)


def aligned_endpoint(a: TransformerModel, b: TransformerModel, align_with: str | AlignConfig | None,
                     progress: PhaseProgress | None) -> tuple[TransformerModel | None, str]:
    """B in A's basis, and how: an AlignConfig runs its matcher; a string is an alignment folder (what
    `symalign align --out` wrote) or an align run's id; None or method "none" leaves B as it is."""
    if align_with in (None, "none") or (isinstance(align_with, AlignConfig) and align_with.method == "none"):
        return None, "none"
    if isinstance(align_with, AlignConfig):
        result = align(a, b, fitted(a, align_with), progress=phase(progress, "align"))
        return result.aligned, align_with.method
    folder = Path(align_with)
    if not folder.is_dir():
        try:
            run = RunStore().get(align_with)
        except SymalignError:
            run = None
        if run is None or run.kind != "align" or not run.artifacts:
            raise SymalignError(f"--align {align_with!r} is neither a method, an alignment folder nor an align "
                                "run's id")
        folder = Path(run.artifacts)
    aligned = load_model(folder)
    check_compatible(a, aligned)
    report = folder / "alignment.json"
    method = read_json_object(report).get("method", "from folder") if report.is_file() else "from folder"
    return canonicalize(aligned), str(method)


def curve_run(a: ModelLike, b: ModelLike, align_with: str | AlignConfig | None = None,
              options: CurveOptions | None = None, data: str | None = None, points: int = 21,
              max_examples: int | None = None, device: str = "auto", out: str | Path | None = None,
              export_at: list[float] = (), store: RunStore | None = None, source: str = "api", label: str = "",
              progress: PhaseProgress | None = None) -> CurveRun:
    """Fit a curve from A to B (aligned first when asked) and measure it beside the straight lines,
    recorded as a `curve` run. Work happens in canonical forms, as every straight line does."""
    options = options or CurveOptions()
    options.check()
    for t in export_at:
        if not 0.0 <= t <= 1.0:
            raise SymalignError(f"--export-at takes t in [0, 1]; got {t}")
    model_a, model_b = model_of(a), model_of(b)
    check_compatible(model_a, model_b)
    spec = data or default_data_spec(model_a)
    source_data = load_data(spec)
    evaluation = split_view(source_data, "eval")
    where = pick_device(device)
    method = align_with.method if isinstance(align_with, AlignConfig) else (align_with or "none")
    settings = CurveSettings(spec, options.bend, options.steps, options.lr, options.batch_size, options.seed,
                             align_with.to_json() if isinstance(align_with, AlignConfig) else str(align_with or "none"),
                             points, max_examples, device)
    with recorded(store, "curve", reference(a), reference(b), method, settings, source, label) as run:
        ca, cb = canonicalize(model_a), canonicalize(model_b)
        line = interpolation_curve(ca, cb, evaluation, points, max_examples, where,
                                   progress=phase(progress, "straight line"))
        aligned, how = aligned_endpoint(ca, cb, align_with, progress)
        aligned_line = None
        if aligned is not None:
            aligned_line = interpolation_curve(ca, aligned, evaluation, points, max_examples, where,
                                               progress=phase(progress, "aligned straight line"))
        end = aligned if aligned is not None else cb
        fit = fit_bend(ca, end, source_data, options, where, phase(progress, f"fit the {options.bend} bend"))
        fit.curve = curve_loss(options.bend, ca, fit.control, end, evaluation, points, max_examples, where,
                               phase(progress, "measure the curve"))
        folder = run.folder(out)
        saved = {"a": ca, "b": end, "bend": ca.with_tensors(fit.control)}
        saved.update({f"t-{t:.2f}": model_at(options.bend, ca, fit.control, end, t) for t in export_at})
        for name, model in saved.items():
            save_model(model, folder / name)
            # what it learned from travels with it, so `barrier`, `plane` ... need no --data for it
            (folder / name / "training.json").write_text(json.dumps({"data": spec, "from": "symalign curve"}))
        summary = curve_summary(line, aligned_line, fit, how)
        summary.update(a=reference(a), b=reference(b), data=spec, out=str(folder))
        (folder / "curve.json").write_text(json.dumps(dict(summary, history=fit.history), indent=1))
        run.finish(summary, folder if out is None else None)
    return CurveRun(run.id, line, aligned_line, fit, folder, summary)


def curve_summary(line: Curve, aligned_line: Curve | None, fit: FittedCurve, method: str) -> dict:
    """The numbers a curve run reports: the curve's barrier (its headline) beside the straight lines'."""
    curve = fit.curve
    out = {"bend": fit.bend, "method": method, "barrier": curve.barrier, "accuracy_barrier": curve.accuracy_barrier,
           "barrier_mean": curve.barrier_mean, "endpoint_loss": curve.endpoint_loss,
           "line_barrier": line.barrier, "line_accuracy_barrier": line.accuracy_barrier,
           "fit_seconds": fit.seconds, "steps": len(fit.history),
           "curve": curve.to_json(), "line": line.to_json()}
    if aligned_line is not None:
        out.update(aligned_line_barrier=aligned_line.barrier,
                   aligned_line_accuracy_barrier=aligned_line.accuracy_barrier, aligned_line=aligned_line.to_json())
    return out


def prefixed(progress: PhaseProgress | None, name: str) -> PhaseProgress | None:
    """`progress` with every phase named "NAME: phase" (two runs' phases told apart)."""
    if progress is None:
        return None
    return lambda phase_name, done, total, *notes: progress(f"{name}: {phase_name}", done, total, *notes)


def curve_pair_runs(a: str, b: str, config: AlignConfig, options: CurveOptions | None = None,
                    data: str | None = None, points: int = 21, max_examples: int | None = None,
                    device: str = "auto", store: RunStore | None = None, source: str = "api", reuse: bool = True,
                    progress: PhaseProgress | None = None) -> list[str | None]:
    """The two curve runs the "Beyond the straight line" page shows: the curve between A and B as
    they are (with the straight line), and the curve after `config`'s alignment (with the aligned
    line). Each is answered from the run history when the same request was computed before."""
    from symalign.runs.reuse import answered

    options = options or CurveOptions()
    ids: list[str | None] = []
    for align_with in (None, config):
        what = "aligned" if align_with is not None else "unaligned"
        settings = {"options": vars(options), "align": align_with.to_json() if align_with else "none", "data": data,
                    "points": points, "max_examples": max_examples}
        ids += answered(store, reuse, "curve", [a, b], settings,
                        lambda w=align_with, name=what: [curve_run(
                            a, b, w, options, data, points, max_examples, device, store=store, source=source,
                            progress=prefixed(progress, name)).run_id])
    return ids


@dataclass
class SavedCurve:
    """A curve folder read back: its endpoints, bend and report; any point on it is a model."""

    a: TransformerModel
    b: TransformerModel
    bend: TransformerModel
    report: dict

    def model_at(self, t: float) -> TransformerModel:
        return model_at(self.report["bend"], self.a, self.bend.tensors, self.b, t)


def load_curve(folder: str | Path) -> SavedCurve:
    folder = Path(folder)
    if not (folder / "curve.json").is_file():
        raise SymalignError(f"{folder} is not a curve folder (no curve.json; `symalign curve ... --out DIR` "
                            "writes one)")
    return SavedCurve(load_model(folder / "a"), load_model(folder / "b"), load_model(folder / "bend"),
                      read_json_object(folder / "curve.json"))


def plane_run(models: list[ModelLike], data: str | None = None, resolution: int = 21, margin: float = 0.2,
              curve: str | Path | list[str | Path] | None = None, random: bool = False, span: float = 1.0,
              seed: int = 0,
              max_examples: int | None = None, device: str = "auto",
              progress: PhaseProgress | None = None, labels: tuple[str, ...] | None = None,
              line_to_c: bool = True) -> Plane:
    """The plane through three models (in canonical form; a curve folder's paths drawn on it) or,
    `random`, Li et al.'s filter-normalised plane around one model."""
    loaded = [canonicalize(model_of(m)) for m in models]
    names = labels or tuple(reference(m) for m in models)
    if random:
        if len(loaded) != 1:
            raise SymalignError(f"plane --random takes one model (got {len(loaded)})")
    elif len(loaded) != 3:
        raise SymalignError(f"plane takes three models (A B C), or one with --random (got {len(loaded)})")
    for m in loaded[1:]:
        check_compatible(loaded[0], m)
    spec = data or default_data_spec(loaded[0])
    evaluation = split_view(load_data(spec), "eval")
    where = pick_device(device)
    if random:
        plane = random_plane(loaded[0], evaluation, resolution, span, seed, max_examples, where,
                             phase(progress, "plane"), name=names[0])
    else:
        plane, basis = three_point_plane(*loaded, evaluation, resolution, margin, names, max_examples, where,
                                         phase(progress, "plane"), line_to_c)
        for folder in [curve] if isinstance(curve, (str, Path)) else curve or []:
            saved = load_curve(folder)
            path, off = curve_path(basis, saved.report["bend"], saved.a.tensors, saved.bend.tensors, saved.b.tensors)
            aligned = saved.report.get("method", "none")
            after = f" ({aligned} alignment)" if aligned != "none" else ""
            plane.paths[f"{saved.report['bend']} curve{after}"] = path
            plane.extra["curve_off_plane"] = max(off, plane.extra.get("curve_off_plane", 0.0))
    plane.extra.update(models=list(names), data=spec)
    return plane


def recorded_plane(settings: PlaneSettings, store: RunStore | None, source: str = "api",
                   progress: PhaseProgress | None = None) -> str | None:
    """`plane_run` recorded as a `plane` run (its metrics are the plane), so a page can draw it after a reload
    and an identical request is answered from the history (`find_plane`)."""
    with recorded(store, "plane", settings.models[0], settings.models[1], "plane", settings, source,
                  f"plane through {', '.join(settings.labels or settings.models)}",
                  models=list(settings.models)) as run:
        plane = plane_run(list(settings.models), resolution=settings.resolution, curve=list(settings.curves),
                          max_examples=settings.max_examples, labels=tuple(settings.labels) or None,
                          line_to_c=settings.line_to_c, progress=progress)
        run.finish(plane.to_json())
    return run.id


def find_plane(store: RunStore, settings: PlaneSettings):
    """The newest finished plane run with exactly these settings, if any."""
    wanted = settings.to_json()
    return next((r for r in store.list(kind="plane", state="done") if r.settings == wanted), None)
