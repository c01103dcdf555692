"""Recorded workflows on a pair of models, shared by the CLI and the app: each one writes a run row
when it starts and its metrics (or its error) when it ends (symalign.runs.recording). Workflows on
three or more models live in symalign.workflows.many, merges and transports in symalign.workflows.merging."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from symalign.data import load_data
from symalign.data.splits import check_split, split_view
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.json_files import read_json_object
from symalign.landscape.interpolation import Curve, check_points, interpolation_curve
from symalign.match.align import Alignment, align
from symalign.match.config import AlignConfig
from symalign.match.layers import frozen_spaces
from symalign.match.results import MatchReport
from symalign.match.weight.streamed import function_check, stream_plan, streamed_weight_match, write_aligned
from symalign.models import canonicalize
from symalign.models.family import TransformerModel
from symalign.models.io import DTYPES, default_data_spec, load_model
from symalign.models.streamed import StreamedCheckpoint
from symalign.models.widen import check_pair, same_widths
from symalign.progress import PhaseProgress, phase
from symalign.runs.recording import ModelLike, loaded_here, model_of, recorded, reference
from symalign.runs.settings import AlignSettings, BarrierSettings, SpectrumSettings
from symalign.runs.store import RunStore
from symalign.symmetry.transform import Transform
from symalign.zoo import zoo_reference


@dataclass
class AlignRun:
    run_id: str | None
    alignment: Alignment
    curve: Curve | None
    out: Path
    streamed: str | None = None  # how a streamed run read its checkpoints (None: loaded in memory)
    function_check: str | None = None  # what a streamed run's function check covered


def curve_metrics(curve: Curve) -> dict:
    return {"barrier": curve.barrier, "barrier_mean": curve.barrier_mean, "endpoint_loss": curve.endpoint_loss,
            "accuracy_barrier": curve.accuracy_barrier, "accuracy_barrier_mean": curve.accuracy_barrier_mean,
            "curve": curve.to_json()}


def measured_curve(pair: list[TransformerModel], spec: str, data_source, points: int,
                   max_examples: int | None, device: str, form: str, progress: PhaseProgress | None,
                   names: tuple[str, str], consume: tuple[bool, bool] = (False, False), split: str = "eval") -> Curve:
    """The interpolation curve the recorded workflows measure, labelled with its endpoints and data.
    The two models are taken out of `pair`, so that a caller that keeps no other reference lets the
    curve free each raw model once its parameters are built (real checkpoints: memory); `consume`
    says which of them nobody else holds at all (interpolation_curve may use their memory). `split`:
    the evaluation split (default) or the training split (symalign.data.splits)."""
    data = split_view(data_source or load_data(spec), split)
    curve = interpolation_curve(pair.pop(0), pair.pop(0), data, points=points,
                                max_examples=max_examples, device=pick_device(device), form=form,
                                progress=phase(progress, "interpolate"), consume=consume)
    curve.extra.update({"a": names[0], "b": names[1], "data": spec, "split": split})
    return curve


def barrier_run(a: ModelLike, b: ModelLike, data: str | None = None, points: int = 21,
                max_examples: int | None = None, device: str = "auto", form: str = "canonical",
                store: RunStore | None = None, source: str = "api", label: str = "",
                progress: PhaseProgress | None = None, data_source=None,
                split: str = "eval") -> tuple[str | None, Curve]:
    """The vanilla (or as-given) barrier between two models, recorded as a `barrier` run."""
    check_split(split)  # before any work
    pair = [model_of(a), model_of(b)]
    spec = data or default_data_spec(pair[0])
    settings = BarrierSettings(spec, points, max_examples, device, form, split)
    with recorded(store, "barrier", reference(a), reference(b), "none", settings, source, label) as run:
        curve = measured_curve(pair, spec, data_source, points, max_examples, device, form, progress,
                               (reference(a), reference(b)), consume=(loaded_here(a), loaded_here(b)), split=split)
        run.finish(curve_metrics(curve))
    return run.id, curve


def align_summary(alignment: Alignment) -> dict:
    r = alignment.report
    out = {"distance_before": r.distance_before, "distance_after": r.distance_after,
           "sweeps": r.sweeps_run, "learned_steps": len(r.learned),
           "function_gap_vs_b": r.function_gap_vs_b, "seconds": r.seconds}
    if r.stopped:  # weight matching (also the learned start): why it ended
        out["stopped"] = r.stopped
    if r.barrier_per_sweep:  # weight matching's --barrier-per-sweep: the barrier-vs-iterations curve
        out["barrier_per_sweep"] = [{k: v for k, v in h.to_json().items() if k in ("sweep", "step", "barrier",
                                                                                  "accuracy_barrier")}
                                    for h in r.barrier_per_sweep]
    if r.widths:  # a narrower model was embedded in the wider one's basis
        out["widths"] = r.widths
    if r.learned_summary is not None and r.learned_summary.unrounded:  # soft --no-round: the trade-off
        out["unrounded"] = r.learned_summary.unrounded
    return out


def align_run(a: ModelLike, b: ModelLike, config: AlignConfig, out: str | Path | None = None,
              measure: bool = True, points: int = 21, max_examples: int | None = None,
              store: RunStore | None = None, source: str = "api", label: str = "",
              progress: PhaseProgress | None = None, data_source=None,
              canonical_a: str | Path | None = None, split: str = "eval") -> AlignRun:
    """Align B to A, save the result, and (by default) measure the barrier between A and aligned B.

    Without `out`, artifacts go to the data folder's runs/<id> (and are deleted with the run).
    `canonical_a`: also write A's canonical form there, the basis aligned B is in (for a merger).
    `split`: the split the barrier is measured on (eval, or train: the data the pair learned from)."""
    check_split(split)
    if measure:
        check_points(points)  # before the alignment, not after it was written and recorded
    streamed = stream_plan(a, b, config.option("stream")) if config.method == "weight" else None
    if streamed is not None:
        return streamed_align_run(a, b, config, streamed, out, measure, points, max_examples, store, source, label,
                                  progress, data_source, canonical_a, split)
    model_a, model_b = model_of(a), model_of(b)
    check_pair(model_a, model_b)
    if canonical_a is not None and not same_widths(model_a, model_b):
        raise SymalignError("--canonical-a: A and B differ in width, so aligned B is in an embedded basis, not A's")
    if same_widths(model_a, model_b):  # align() and the curve take canonical forms; the raw ones can go now
        # one at a time, and a model loaded here is folded tensor by tensor into its canonical form
        # (each raw tensor let go as it is read: real checkpoints never hold raw and canonical at once)
        model_a = canonicalize(model_a, consume=loaded_here(a))
        if canonical_a is not None:
            from symalign.models import save_model

            save_model(model_a, canonical_a, config.dtype)
        model_b = canonicalize(model_b, consume=loaded_here(b))
    config = fitted(model_a, config)
    settings = AlignSettings(config.to_json(), points, max_examples, measure, owns_artifacts=out is None, split=split)
    with recorded(store, "align", reference(a), reference(b), config.method, settings, source, label) as run:
        handed = [model_b]  # handed over: align() frees B once it is transformed (real checkpoints: memory)
        del model_b
        alignment = align(model_a, handed.pop(), config, progress=phase(progress, "align"),
                          consume_b=loaded_here(b))
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
                                   config.device, "canonical", progress, (reference(a), str(saved)),
                                   consume=(loaded_here(a), False), split=split)
            metrics.update(curve_metrics(curve))
        run.finish(metrics, saved)
    return AlignRun(run.id, alignment, curve, saved)



def streamed_align_run(a: str | Path, b: str | Path, config: AlignConfig, note: str, out: str | Path | None = None,
                       measure: bool = True, points: int = 21, max_examples: int | None = None,
                       store: RunStore | None = None, source: str = "api", label: str = "",
                       progress: PhaseProgress | None = None, data_source=None,
                       canonical_a: str | Path | None = None, split: str = "eval") -> AlignRun:
    """align_run by weight matching on two checkpoints read a tensor at a time (symalign.match.weight.streamed):
    the same record and files; the barrier, when asked for, loads A and the written aligned B."""
    begin = time.perf_counter()
    model_a, model_b = StreamedCheckpoint(a), StreamedCheckpoint(b)
    config = config.for_spec(model_b.spec)
    classes = {k: c for k, c in config.classes.items() if c != "none"}
    settings = AlignSettings(config.to_json(), points, max_examples, measure, owns_artifacts=out is None, split=split)
    with recorded(store, "align", reference(a), reference(b), config.method, settings, source, label) as run:
        transform, sweeps, before = streamed_weight_match(model_a, model_b, config, classes,
                                                          frozen_spaces(model_b.spec, config.layers),
                                                          phase(progress, "align"), pick_device(config.device),
                                                          phase(progress, "read A's norms and embedding"))
        out = run.folder(out)
        dtype = None if config.dtype == "auto" else DTYPES[config.dtype]
        write_aligned(model_b, transform, out, dtype, phase(progress, "write aligned B"))
        gap, checked = function_check(model_b, transform)
        report = MatchReport(model_a.source, model_b.source, config.to_json(), before, sweeps[-1].distance, gap,
                             time.perf_counter() - begin, sweeps=sweeps)
        alignment = Alignment(transform, None, report)
        alignment.save_records(out)
        if canonical_a is not None:
            write_aligned(model_a, Transform(), Path(canonical_a), dtype)
        metrics = dict(align_summary(alignment), classes=config.classes, streamed=note, function_check=checked)
        curve = None
        if measure:
            pair = [model_of(a), load_model(out)]
            spec = config.data or default_data_spec(pair[0])
            curve = measured_curve(pair, spec, data_source, points, max_examples,
                                   config.device, "canonical", progress, (reference(a), str(out)),
                                   consume=(True, True), split=split)
            metrics.update(curve_metrics(curve))
        run.finish(metrics, out)
    return AlignRun(run.id, alignment, curve, out, note, checked)


def align_then_vanilla(a: ModelLike, b: ModelLike, config: AlignConfig, with_vanilla: bool = True, points: int = 21,
                       max_examples: int | None = None, store: RunStore | None = None, source: str = "api",
                       label: str = "", progress: PhaseProgress | None = None, data_source=None,
                       reuse: bool = False, split: str = "eval") -> list[str | None]:
    """The Align page's run: the alignment with its barrier, then (`with_vanilla`) the vanilla barrier
    of the same pair on the same data and points, so the two curves compare like with like. One
    workflow for the page and its background job. Returns the run ids, the alignment's first.
    `reuse`: an identical earlier request (same model files, settings, seed) is answered with its
    runs, and identical requests at once compute once (symalign.runs.reuse); pass models as loaded."""
    from symalign.runs.reuse import answered

    def vanilla() -> list[str | None]:
        return [barrier_run(a, b, data=config.data, points=points, max_examples=max_examples, device=config.device,
                            store=store, source=source, label=label, progress=progress, data_source=data_source,
                            split=split)[0]]

    def compute() -> list[str | None]:
        ids = [align_run(a, b, config, points=points, max_examples=max_examples, store=store, source=source,
                         label=label, progress=progress, data_source=data_source, split=split).run_id]
        if with_vanilla:  # one vanilla barrier per pair, data, points and split, whatever the alignment (#56)
            key = {"data": config.data, "points": points, "max_examples": max_examples, "split": split}
            ids += answered(store, True, "vanilla-barrier", [a, b], key, vanilla)
        return ids

    settings = {"config": config.to_json(), "with_vanilla": with_vanilla, "points": points,
                "max_examples": max_examples, "label": label}
    if split != "eval":  # the evaluation split keeps earlier requests' keys
        settings["split"] = split
    return answered(store, reuse, "align-then-vanilla", [a, b], settings, compute)


def check_classes(model: TransformerModel, classes: dict[str, str]) -> None:
    """Refuse an inadmissible class (with the spec's reason) before a run is recorded. Matchers
    work in canonical form, so that is the spec that decides."""
    model.family.spec(model.config, canonical=True).check_classes(classes)


def fitted(model: TransformerModel, config: AlignConfig) -> AlignConfig:
    """The config on this model (a preset fitted to its spec, every class checked) before a run is recorded."""
    return config.for_spec(model.family.spec(model.config, canonical=True))


def spectrum_run(directory: str | Path, store: RunStore | None = None, source: str = "api", label: str = "",
                 run: str | None = None) -> tuple[str | None, dict]:
    """Eigen-angle spectra of a saved learned alignment, recorded as a `spectrum` run."""
    from symalign.landscape.spectrum import alignment_spectrum

    result = alignment_spectrum(directory)  # refuse a directory without learned rotations before recording
    record = Path(directory) / "alignment.json"
    config = read_json_object(record) if record.is_file() else {}
    models = config.get("models") or [config.get("a", ""), config.get("b", str(directory))]
    models = [zoo_reference(m) if m else m for m in models]
    settings = SpectrumSettings(str(directory), run)
    with recorded(store, "spectrum", models[0], models[1] if len(models) > 1 else "", result.get("method") or "",
                  settings, source, label, models) as run:
        run.finish(result, directory)
    return run.id, result
