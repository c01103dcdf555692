"""The guided demo of the Home page, as plain functions (the page only draws what they return).

Part 1 plants a random symmetry in a trained model: the function is the same, the weights move a
lot, and the straight line between the two copies crosses a high barrier, which weight matching
with the same symmetry classes removes. Part 2 does it for real: two seeds trained apart, with
no alignment, with weight matching and with learned matching."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import canonicalize, spec_of, transformed
from symalign.models.compare import function_gap, relative_change
from symalign.models.family import TransformerModel
from symalign.progress import PhaseProgress, phase
from symalign.runs.reuse import answered
from symalign.runs.store import RunStore
from symalign.symmetry.random import random_transform
from symalign.workflows.execute import align_run, barrier_run

FULL_CLASSES = CLASS_PRESETS["all"]


@dataclass
class PlantedDemo:
    function_gap: float
    weight_change: float
    vanilla: dict
    aligned: dict
    align_seconds: float


def planted_demo(model: TransformerModel, data, seed: int = 0, max_examples: int | None = None,
                 progress: PhaseProgress | None = None) -> PlantedDemo:
    """A vs T(A) for a random admissible T: same function, big barrier; weight matching undoes T."""
    a = canonicalize(model)
    planted = transformed(a, random_transform(spec_of(a), FULL_CLASSES, seed=seed))
    vanilla = interpolation_curve(a, planted, data, max_examples=max_examples,
                                  progress=phase(progress, "vanilla path"))
    start = time.perf_counter()
    recovered = align(a, planted, AlignConfig(method="weight", classes=FULL_CLASSES),
                      progress=phase(progress, "weight matching"))
    seconds = time.perf_counter() - start
    aligned = interpolation_curve(a, recovered.aligned, data, max_examples=max_examples,
                                  progress=phase(progress, "aligned path"))
    return PlantedDemo(function_gap(a, planted), relative_change(a, planted), vanilla.to_json(), aligned.to_json(),
                       seconds)


def seeds_demo(a: TransformerModel | str, b: TransformerModel | str, data_spec: str, store: RunStore | None,
               learned_steps: int | None = None, max_examples: int | None = None, data_source=None,
               progress: PhaseProgress | None = None, reuse: bool = False,
               on_run: Callable[[str | None], None] | None = None) -> list[str | None]:
    """Vanilla, weight matching (all classes) and learned matching between two seeds, as runs; the
    learned run uses the same defaults as `symalign align --method learned` (the data's steps).
    `reuse`: each part asked before (or at the same time) is answered with its run.
    `on_run(run_id)`: called as each of the three lands, so a page can show it before the next ends."""

    def landed(run_id: str | None) -> str | None:
        if on_run is not None:
            on_run(run_id)
        return run_id

    measured = {"data": data_spec, "max_examples": max_examples}  # what every part's numbers depend on

    def part(what: str, settings: dict, compute: Callable[[], str | None]) -> str | None:
        # each part is answered on its own, keyed by what it depends on: a demo cut off half-way (a closed
        # tab, a stopped worker) is finished, not recomputed, and other learned steps redo only that part
        return landed(answered(store, reuse, f"demo-seeds: {what}", [a, b], settings, lambda: [compute()])[0])

    ids = [part("none", measured, lambda: barrier_run(a, b, data=data_spec, max_examples=max_examples, store=store,
                                                      source="app", label="demo: no alignment", progress=progress,
                                                      data_source=data_source)[0])]
    weight = AlignConfig(method="weight", classes=FULL_CLASSES)
    ids.append(part("weight", measured, lambda: align_run(a, b, weight, max_examples=max_examples, store=store,
                                                          source="app", label="demo: weight matching",
                                                          progress=progress, data_source=data_source).run_id))
    learned = AlignConfig(method="learned", classes=FULL_CLASSES, data=data_spec, steps=learned_steps)
    ids.append(part("learned", {**measured, "learned_steps": learned_steps},
                    lambda: align_run(a, b, learned, max_examples=max_examples, store=store, source="app",
                                      label="demo: learned matching", progress=progress,
                                      data_source=data_source).run_id))
    return ids
