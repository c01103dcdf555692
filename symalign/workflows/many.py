"""Recorded workflows on three or more models: universe alignment (with the barrier of every aligned
pair) and the loss surface over the simplex of three."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from symalign.data import load_data
from symalign.data.splits import check_split, split_view
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.interpolation import Curve
from symalign.match.config import AlignConfig
from symalign.models.compat import check_compatible
from symalign.models.family import TransformerModel
from symalign.models.io import default_data_spec
from symalign.progress import PhaseProgress, phase
from symalign.runs.recording import ModelLike, model_of, recorded, reference
from symalign.runs.settings import ManySettings, SimplexSettings
from symalign.runs.store import RunStore
from symalign.workflows.execute import fitted, measured_curve

if TYPE_CHECKING:
    from symalign.match.universe import UniverseAlignment


def _three_or_more(refs: list[ModelLike], what: str, exactly: int | None = None) -> list[TransformerModel]:
    """Load the models of a multi-model workflow and refuse a wrong count or mismatched
    architectures before anything is recorded or computed."""
    if exactly is not None and len(refs) != exactly:
        raise SymalignError(f"{what} needs exactly {exactly} models (got {len(refs)})")
    if len(refs) < 3:
        raise SymalignError(f"{what} needs at least three models (got {len(refs)}); for two use `symalign align`")
    models = [model_of(m) for m in refs]
    for i, other in enumerate(models[1:], start=2):
        try:
            check_compatible(models[0], other)
        except SymalignError as exc:
            raise type(exc)(f"model 1 and model {i} cannot be aligned: {exc}") from None
    return models


def _whole_models(config: AlignConfig, what: str) -> None:
    if config.layers:
        raise SymalignError(f"{what} aligns every block (a shared basis for three or more models); --layers is for "
                            f"two models: symalign align A B --layers {config.layers}")


@dataclass
class ManyRun:
    run_id: str | None
    universe: UniverseAlignment
    curves: list[tuple[tuple[int, int], Curve]]
    outputs: list[Path]


def align_many_run(refs: list[ModelLike], config: AlignConfig, out: str | Path | None = None, measure: bool = False,
                   points: int = 21, max_examples: int | None = None, store: RunStore | None = None,
                   source: str = "api", label: str = "", progress: PhaseProgress | None = None,
                   data_source=None, split: str = "eval") -> ManyRun:
    """Universe alignment of three or more models, saved to DIR/0, DIR/1, ...; optionally the barrier
    of every pair of aligned models (on `split`). Without `out`, artifacts go to the data folder's runs/<id>."""
    from itertools import combinations

    from symalign.match.universe import align_many

    check_split(split)
    _whole_models(config, "align-many")
    models = _three_or_more(refs, "align-many")
    config = fitted(models[0], config)
    names = [reference(m) for m in refs]
    settings = ManySettings(config.to_json(), points, max_examples, measure, owns_artifacts=out is None, split=split)
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
                                       config.device, "canonical", progress, (names[i], names[j]), split=split)
                curves.append(((i, j), curve))
            metrics["pairwise"] = [{"pair": list(p), "barrier": c.barrier, "barrier_mean": c.barrier_mean,
                                    "accuracy_barrier": c.accuracy_barrier, "curve": c.to_json()} for p, c in curves]
        run.finish(metrics, out)
    return ManyRun(run.id, universe, curves, outputs)


def simplex_run(refs: list[ModelLike], config: AlignConfig, resolution: int = 10, epsilon: float = 0.05,
                max_examples: int | None = None, store: RunStore | None = None, source: str = "api",
                label: str = "", progress: PhaseProgress | None = None, data_source=None, split: str = "eval"):
    """The loss surface over the simplex of three models after their universe alignment (or none), on
    the evaluation split or the training split (`split`)."""
    from symalign.landscape.simplex import barycentric_grid, simplex_surface
    from symalign.match.matchers import matcher, method_names
    from symalign.match.universe import align_many

    if not matcher(config.method).universe:
        raise SymalignError(f"simplex supports --method {', '.join(method_names(universe=True))}; "
                            f"got {config.method!r}")
    check_split(split)
    barycentric_grid(resolution)  # refuse a bad resolution before loading anything
    if not epsilon >= 0:
        raise SymalignError(f"--epsilon must be 0 or more; got {epsilon}")
    _whole_models(config, "simplex")
    models = _three_or_more(refs, "simplex", exactly=3)
    config = fitted(models[0], config)
    names = [reference(m) for m in refs]
    spec = config.data or default_data_spec(models[0])
    settings = SimplexSettings(config.to_json(), spec, resolution, epsilon, max_examples, split)
    with recorded(store, "simplex", names[0], names[1], config.method, settings, source, label, names) as run:
        aligned = align_many(models, config, progress=phase(progress, "align")).aligned
        surface = simplex_surface(*aligned, split_view(data_source or load_data(spec), split), resolution=resolution,
                                  epsilon=epsilon,
                                  max_examples=max_examples, device=pick_device(config.device),
                                  progress=phase(progress, "simplex"))
        surface.extra.update({"method": config.method, "classes": config.classes, "models": names, "data": spec,
                              "split": split})
        run.finish(dict(surface.to_json(), barrier=surface.max_barrier))
    return run.id, surface
