"""Universe alignment: N models brought into one shared basis, the first model's (Theus et al.).

- weight: every model is weight-matched to the reference; then, for `rounds` rounds, each model
  is matched again to the mean of the *other* aligned models (Git Re-Basin's MergeMany), which
  pulls the models towards one consensus without moving the reference;
- learned / soft: all models' transforms are refined jointly from that start (the reference
  fixed) on the task loss at θ(w) = Σ w_i T_i(θ_i), w ~ Dirichlet(α·1) per step (`learned`).
Every aligned model computes its original function (checked and reported)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from symalign.data import load_data
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.match.config import AlignConfig
from symalign.match.learned.optimisation import learn_transforms
from symalign.match.learned.start import start_classes
from symalign.match.matchers import matcher, method_names
from symalign.match.weight.descent import boundary_tensors, distance, sweep_settings, weight_match
from symalign.models import canonicalize, save_model, spec_of, transformed
from symalign.models.compare import function_gap
from symalign.models.compat import check_compatible
from symalign.models.family import TransformerModel
from symalign.models.finite import FOLDED, require_finite
from symalign.symmetry.transform import Transform

Progress = Callable[[int, int], None]


@dataclass
class UniverseAlignment:
    aligned: list[TransformerModel]  # model i in the shared basis; aligned[0] is the reference, canonical
    transforms: list[Transform]  # transforms[0] is the identity
    report: dict = field(default_factory=dict)
    starts: list[Transform | None] = field(default_factory=list)  # learned: the weight-matching starts

    def save(self, out: str | Path) -> list[Path]:
        """DIR/0, DIR/1, ...: Hugging Face checkpoints with their transforms; DIR/alignment.json."""
        out = Path(out)
        dirs = []
        for i, (model, transform) in enumerate(zip(self.aligned, self.transforms)):
            folder = save_model(model, out / str(i), self.report["config"].get("dtype", "auto"))
            start = self.starts[i] if i < len(self.starts) else None
            transform.save(folder / "transforms.safetensors", {"settings": json.dumps(self.report["config"])},
                           start=start)
            member = dict(self.report["members"][i], config=self.report["config"], universe=str(out))
            (folder / "alignment.json").write_text(json.dumps(member, indent=2))
            dirs.append(folder)
        (out / "alignment.json").write_text(json.dumps(dict(self.report, outputs=[str(d) for d in dirs]), indent=2))
        return dirs


def _mean(tensor_sets: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {k: sum(t[k].double() for t in tensor_sets) / len(tensor_sets) for k in tensor_sets[0]}


def _pairwise(models: list[dict[str, torch.Tensor]]) -> list[list[float]]:
    return [[distance(a, b) for b in models] for a in models]


def align_many(models: list[TransformerModel], config: AlignConfig,
               progress: Progress | None = None) -> UniverseAlignment:
    """Align models[1:] into models[0]'s basis, jointly (see the module docstring)."""
    if len(models) < 3:
        raise SymalignError(f"universe alignment needs at least three models (got {len(models)}); "
                            "for two use `symalign align`")
    if not matcher(config.method).universe:
        raise SymalignError(f"universe alignment supports --method {', '.join(method_names(universe=True))}; "
                            f"got {config.method!r}")
    for other in models[1:]:
        check_compatible(models[0], other)
    for i, model in enumerate(models):
        require_finite(model, f"model {i + 1}")
    begin = time.perf_counter()
    canon = [canonicalize(m) for m in models]
    for i, model in enumerate(canon):
        require_finite(model, f"model {i + 1}", FOLDED)
    spec = spec_of(canon[0])
    config = config.for_spec(spec)
    active = {k: c for k, c in config.classes.items() if c != "none"}
    n = len(canon)
    transforms = [Transform() for _ in canon]
    sweeps: list[list] = [[] for _ in canon]  # SweepRecord lists
    rounds: list[dict] = []
    boundary = boundary_tensors(canon[0])
    device = pick_device(config.device)
    # a learned universe starts from rotations where it learns invertible maps (learned.START_CLASSES)
    solved = start_classes(active, spec) if matcher(config.method).learns else active
    if config.method != "none" and active:
        for i in range(1, n):
            transforms[i], sweeps[i] = weight_match(canon[0].tensors, canon[i].tensors, spec, solved, boundary,
                                                    **sweep_settings(config), device=device)
            if progress:
                progress(i, n - 1)
        for r in range(1, config.rounds + 1):
            aligned_tensors = [canon[0].tensors] + [transformed(m, t).tensors for m, t in zip(canon[1:],
                                                                                              transforms[1:])]
            for i in range(1, n):
                target = _mean([t for j, t in enumerate(aligned_tensors) if j != i])
                transforms[i], _ = weight_match(target, canon[i].tensors, spec, solved, boundary,
                                                **sweep_settings(config), device=device)
                aligned_tensors[i] = transformed(canon[i], transforms[i]).tensors
            mean = _mean(aligned_tensors)
            rounds.append({"round": r, "distance_to_mean": [distance(mean, t) for t in aligned_tensors],
                           "seconds": time.perf_counter() - begin})
    starts: list[Transform | None] = [None] * n
    learned: dict = {}
    if matcher(config.method).learns and active:
        starts = [None] + transforms[1:]
        result = learn_transforms(canon, transforms[1:], spec, active, load_data(config.data),
                                  config.learned_options(), device=device, progress=progress)
        transforms = [Transform()] + result.transforms
        learned = {"history": result.history, "summary": result.summary}
    aligned = [canon[0]] + [transformed(m, t) for m, t in zip(canon[1:], transforms[1:])]
    members = [{"index": i, "model": models[i].source, "role": "reference" if i == 0 else "aligned",
                "function_gap": function_gap(models[i], aligned[i]),
                "sweeps": [s.to_json() for s in sweeps[i]]} for i in range(n)]
    report = {
        "kind": "universe", "models": [m.source for m in models], "config": config.to_json(), "members": members,
        "rounds": rounds, "learned": learned.get("history", []), "learned_summary": learned.get("summary", {}),
        "pairwise_distance_before": _pairwise([m.tensors for m in canon]),
        "pairwise_distance_after": _pairwise([m.tensors for m in aligned]),
        "seconds": time.perf_counter() - begin,
    }
    return UniverseAlignment(aligned, transforms, report, starts)
