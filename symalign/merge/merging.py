"""Merge N models into one: align them into the first model's basis, then combine their weights.

Merge rules are registered in symalign.merge.rules; the built-in ones:
- `average`: the mean of the (aligned) logical tensors;
- `fisher`: Fisher-weighted mean Σ F_i θ_i / Σ F_i with each model's diagonal Fisher on its
  training data (Matena & Raffel), ε-floored so a weight no model is sure of falls back to the mean;
- `regmean`: per linear map, W = (Σ W_i G_i)(Σ G_i)⁻¹ with G_i the Gram matrix of model i's inputs
  to that map (Jin et al.), everything else averaged (see symalign.merge.regmean).
`--align none` merges the canonical forms as they are (for contrast). The merged model is exported
as a standard Hugging Face checkpoint (canonical config), with merge.json."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from symalign.data import load_data
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.evaluate import Evaluator, Metrics
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.merge.rules import ALIGNS, MergeInputs, merge_rule, phase
from symalign.models import canonicalize, save_model
from symalign.models.compat import check_compatible
from symalign.models.family import TransformerModel

Progress = Callable[[str, int, int], None]


@dataclass
class MergeResult:
    merged: TransformerModel
    report: dict = field(default_factory=dict)

    def save(self, out: str | Path, dtype: str = "auto") -> Path:
        out = save_model(self.merged, out, dtype)
        (out / "merge.json").write_text(json.dumps(self.report, indent=2))
        return out


def aligned_members(models: list[TransformerModel], how_align: str, data_spec: str | None,
                    seed: int = 0, progress: Progress | None = None, device: str = "cpu") -> list[TransformerModel]:
    """Every model in the first one's basis (canonical forms; each the same function as before)."""
    if how_align == "none":
        return [canonicalize(m) for m in models]
    config = AlignConfig(method=how_align, preset="all", data=data_spec, seed=seed, device=device)
    if len(models) == 2:
        result = align(models[0], models[1], config, progress=phase(progress, "align"))
        return [canonicalize(models[0]), result.aligned]
    from symalign.match.universe import align_many

    return align_many(models, config, progress=phase(progress, "align")).aligned


def average(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `average` rule: the mean of the (aligned) logical tensors."""
    return {n: torch.stack([m.tensors[n].double() for m in members]).mean(0).to(t.dtype)
            for n, t in members[0].tensors.items()}


def combine(members: list[TransformerModel], how: str, data=None, examples: int = 64, seed: int = 0,
            progress: Progress | None = None, device: str = "cpu") -> dict[str, torch.Tensor]:
    """The merged logical tensors of models that already share one basis, by the registered rule `how`
    (symalign.merge.rules; statistics that need forward or backward passes computed on `device`)."""
    rule = merge_rule(how)
    return rule.combiner()(members, MergeInputs(data, examples, seed, pick_device(device), progress))


def merge_models(models: list[TransformerModel], how_align: str = "weight", how: str = "average",
                 data_spec: str | None = None, examples: int = 64, max_examples: int | None = None, seed: int = 0,
                 progress: Progress | None = None, members: list[TransformerModel] | None = None,
                 device: str = "cpu") -> MergeResult:
    """Align, combine, and evaluate the inputs and the merged model on the data's evaluation split
    (on `device`: cpu, cuda, mps or auto). `members`: the models already aligned by `aligned_members`
    (several merge rules, one alignment)."""
    if len(models) < 2:
        raise SymalignError(f"merge needs at least two models (got {len(models)})")
    if how_align not in ALIGNS:
        raise SymalignError(f"unknown --align {how_align!r}; choose {', '.join(ALIGNS)}")
    rule = merge_rule(how)  # an unknown rule is refused here, with the choices
    if len(models) < rule.min_models:
        raise SymalignError(f"--how {how} merges at least {rule.min_models} models (got {len(models)})")
    for other in models[1:]:
        check_compatible(models[0], other)
    data = load_data(data_spec) if data_spec else None
    if data is None and (rule.needs_data or how_align == "learned"):
        raise SymalignError(f"--how {how} --align {how_align} needs data (--data SPEC)")
    members = members or aligned_members(models, how_align, data_spec, seed, progress, device)
    # keeps the first model's source, so its tokenizer files travel with the exported checkpoint
    merged = members[0].with_tensors(combine(members, how, data, examples, seed, progress, device))
    report = {"align": how_align, "how": how, "models": [m.source for m in models], "data": data_spec,
              "examples": examples if rule.needs_data else None}
    if data is not None:
        evaluator = Evaluator(members[0], data, max_examples, pick_device(device))

        def metrics(model: TransformerModel) -> dict:
            m: Metrics = evaluator(evaluator.hf_params(model))
            return {"loss": m.loss, "accuracy": m.accuracy}

        report["inputs"] = [{"model": src.source, **metrics(m)} for src, m in zip(models, members)]
        report["merged"] = metrics(merged)
    return MergeResult(merged, report)

