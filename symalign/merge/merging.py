"""Merge N models into one: align them into the first model's basis, then combine their weights.

Merge rules are registered in symalign.merge.builtin_rules; the built-in ones:
- `average`: the mean of the (aligned) logical tensors;
- `fisher`: Fisher-weighted mean Σ F_i θ_i / Σ F_i with each model's diagonal Fisher on its
  training data (Matena & Raffel), ε-floored so a weight no model is sure of falls back to the mean;
- `regmean`: per linear map, W = (Σ W_i G_i)(Σ G_i)⁻¹ with G_i the Gram matrix of model i's inputs
  to that map (Jin et al.), everything else averaged (see symalign.merge.regmean).
`--align none` merges the canonical forms as they are (for contrast); `--align ot-acts|ot-wts` carries
the others onto the first by optimal-transport plans instead (symalign.merge.ot_fusion: the field's
OT-fusion baselines; soft plans are not function-preserving, so the inputs are reported as they were).
The merged model is exported as a standard Hugging Face checkpoint (canonical config), with merge.json."""

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
from symalign.match.matchers import matcher
from symalign.merge.builtin_rules import merge_rule
from symalign.merge.merge_rule import ALIGNS, MERGE_ALIGNS, OT_ALIGNS, MergeInputs, install_hint
from symalign.models import canonicalize, save_model
from symalign.models.compat import HEAD, check_compatible
from symalign.models.family import TransformerModel
from symalign.models.finite import require_finite, require_finite_tensors
from symalign.progress import phase

Progress = Callable[[str, int, int], None]


@dataclass
class MergeResult:
    merged: TransformerModel
    report: dict = field(default_factory=dict)
    members: list[TransformerModel] | None = None  # the inputs in one basis (kept when asked: export_inputs)

    def save(self, out: str | Path, dtype: str = "auto") -> Path:
        out = save_model(self.merged, out, dtype)
        (out / "merge.json").write_text(json.dumps(self.report, indent=2))
        return out

    def export_inputs(self, out: str | Path) -> Path:
        """The hand-off to an external merger: every input as it was merged (in the first, or base,
        model's canonical basis) under out/inputs/N, float32, and out/mergekit.yml, which
        `mergekit-yaml out/mergekit.yml DIR` turns into the same weights (for mergekit's methods)."""
        import yaml

        if self.members is None:
            raise SymalignError("this merge kept no inputs to export (merge_models(..., keep_members=True))")
        out = Path(out)
        folders = [save_model(m, out / "inputs" / str(i), "float32") for i, m in enumerate(self.members)]
        rule = merge_rule(self.report["how"])
        if rule.requires == "mergekit":
            from symalign.merge.mergekit_methods import mergekit_config

            config = mergekit_config(rule.name, folders, self.report["parameters"], self.report["base"] is not None)
            (out / "mergekit.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        return out / "inputs"


def aligned_members(models: list[TransformerModel], how_align: str, data_spec: str | None,
                    seed: int = 0, progress: Progress | None = None, device: str = "cpu",
                    ot=None, max_examples: int | None = None, steps: int | None = None,
                    config: AlignConfig | None = None) -> list[TransformerModel]:
    """Every model in the first one's basis (canonical forms; each the same function as before, except
    under OT fusion's soft plans: `ot` holds their solver, symalign.merge.ot_fusion.OTSettings).
    `config`: the alignment in full (classes, options, layers: what `align` takes; its method is
    `how_align`); without it, all classes at the method's defaults. `steps`: the learned matcher's most
    steps (None: the data's default); `max_examples`: the examples OT-ACTS reads activations on (None:
    symalign.merge.ot_fusion.ACTIVATION_EXAMPLES), as `align --max-examples` bounds activation matching's."""
    if how_align in OT_ALIGNS:
        from symalign.merge.ot_fusion import fuse_members

        data = load_data(data_spec) if data_spec else None
        with_progress = phase(progress, "transport")
        if with_progress:
            with_progress(0, 1)
        members = fuse_members(models, how_align, data, ot, max_examples, pick_device(device))
        if with_progress:
            with_progress(1, 1)
        return members
    if how_align == "none":
        return [canonicalize(m) for m in models]
    if config is None:
        config = AlignConfig(method=how_align, preset="all", data=data_spec, seed=seed, device=device, steps=steps)
    elif config.method != how_align:
        raise SymalignError(f"the alignment's method {config.method!r} is not --align {how_align!r}")
    if len(models) == 2:
        result = align(models[0], models[1], config, progress=phase(progress, "align"))
        return [canonicalize(models[0]), result.aligned]
    from symalign.match.universe import align_many

    return align_many(models, config, progress=phase(progress, "align")).aligned


def combine(members: list[TransformerModel], how: str, data=None, examples: int = 64, seed: int = 0,
            progress: Progress | None = None, device: str = "cpu", parameters: dict | None = None,
            has_base: bool = False, ot=None, max_examples: int | None = None) -> dict[str, torch.Tensor]:
    """The merged logical tensors of models that already share one basis, by the registered rule `how`
    (symalign.merge.builtin_rules; statistics that need forward or backward passes computed on `device`).
    `ot`, `max_examples`: the OT rules' plan solver and activation examples."""
    rule = merge_rule(how)
    inputs = MergeInputs(data, examples, seed, pick_device(device), progress, rule.fill(parameters), has_base,
                         ot, max_examples)
    return rule.combiner()(members, inputs)


def check_rule(how: str, n_models: int, base: bool, parameters: dict | None = None) -> None:
    """Refuse, before any work, a rule that cannot run on these inputs: too few models, a base missing
    or not wanted, unknown parameters, a missing package."""
    rule = merge_rule(how)  # an unknown rule is refused here, with the choices
    if n_models < rule.min_models:
        what = " (the base included)" if rule.needs_base else ""
        raise SymalignError(f"--how {how} merges at least {rule.min_models} models{what} (got {n_models})")
    if rule.needs_base and not base:
        raise SymalignError(f"--how {how} needs --base M: the model the others were fine-tuned from "
                            "(they are aligned into its basis and merged as task vectors from it)")
    if not rule.needs_base and base:
        raise SymalignError(f"--how {how} takes no --base" + (" (its first model is the base)" if rule.base == "first"
                                                               else ""))
    if rule.base == "first" and n_models != 2:
        raise SymalignError(f"--how {how} merges exactly two models (got {n_models})")
    rule.fill(parameters)
    if not rule.available:
        raise SymalignError(f"--how {how} runs on {rule.requires}, which is not installed: "
                            f"{install_hint(rule.requires)}")


def merge_models(models: list[TransformerModel], how_align: str = "weight", how: str = "average",
                 data_spec: str | None = None, examples: int = 64, max_examples: int | None = None, seed: int = 0,
                 progress: Progress | None = None, members: list[TransformerModel] | None = None,
                 device: str = "cpu", base: TransformerModel | None = None, parameters: dict | None = None,
                 keep_members: bool = False, ot=None, alignment: AlignConfig | None = None,
                 keep_head: bool = False) -> MergeResult:
    """Align, combine, and evaluate the inputs and the merged model on the data's evaluation split
    (on `device`: cpu, cuda, mps or auto). `members`: the models already aligned by `aligned_members`
    (several merge rules, one alignment). `base`: the model the others were fine-tuned from, for the
    rules that need one (it comes first: the others are aligned into its basis). `parameters`: the
    rule's (e.g. t, weight, density), over its defaults. `ot`: OT fusion's solver (OTSettings), for
    `--align ot-*` and the `ot-*` rules. `alignment`: the matcher's classes and options in full
    (aligned_members' `config`; None: all classes at the method's defaults). `keep_head`: the output head
    (every `head.*` tensor: a classifier's pooler and classes) copied from the first model, not merged, as
    fusion papers keep the classifier of the model fine-tuned on the task they evaluate."""
    if base is not None:
        models = [base] + list(models)
    if len(models) < 2:
        raise SymalignError(f"merge needs at least two models (got {len(models)})")
    if how_align not in MERGE_ALIGNS:
        raise SymalignError(f"unknown --align {how_align!r}; choose {', '.join(MERGE_ALIGNS)}")
    check_rule(how, len(models), base is not None, parameters)
    rule = merge_rule(how)
    if how_align in OT_ALIGNS and rule.base != "none":
        raise SymalignError(f"--how {how} merges task vectors from a base, which OT fusion's soft plans do not "
                            "carry; use --align weight or learned with it")
    if how_align in OT_ALIGNS and how in OT_ALIGNS:
        raise SymalignError(f"--align {how_align} --how {how} would transport twice: OT fusion is either the "
                            f"alignment or the rule (--align none --how {how_align} is --align {how_align})")
    if alignment is not None and how_align in OT_ALIGNS + ("none",):
        raise SymalignError(f"--align {how_align} takes no matcher classes or options; they are for --align "
                            "weight, activation, learned or soft")
    for other in models[1:]:
        check_compatible(models[0], other)
    for i, model in enumerate(models):
        require_finite(model, f"merge input {i + 1}")
    data = load_data(data_spec) if data_spec else None
    if data is None and (rule.needs_data or how_align == "ot-acts"
                         or (how_align in ALIGNS and matcher(how_align).needs_data)):
        raise SymalignError(f"--how {how} --align {how_align} needs data (--data SPEC)")
    members = members or aligned_members(models, how_align, data_spec, seed, progress, device, ot, max_examples,
                                         config=alignment)
    # keeps the first model's source, so its tokenizer files travel with the exported checkpoint
    has_base = base is not None or rule.base == "first"
    combined = combine(members, how, data, examples, seed, progress, device, parameters, has_base, ot, max_examples)
    if keep_head:
        combined.update({n: t for n, t in members[0].tensors.items() if n.startswith(HEAD)})
    given = ", ".join(f"{k}={v:g}" for k, v in (parameters or {}).items())
    # e.g. linear with weight=0 normalises by a zero sum: a NaN model was recorded with loss NaN
    require_finite_tensors(combined, f"the model --how {how}{f' ({given})' if given else ''} merged")
    merged = members[0].with_tensors(combined)
    report = {"align": how_align, "how": how, "models": [m.source for m in models], "data": data_spec,
              "examples": examples if rule.needs_data else None, "parameters": rule.fill(parameters),
              "base": models[0].source if has_base else None}
    if keep_head:
        report["kept_head"] = models[0].source
    if alignment is not None:
        report["alignment"] = alignment.matcher_json()
    if how_align in OT_ALIGNS or how in OT_ALIGNS:
        report["ot"] = _ot_json(ot, how_align if how_align in OT_ALIGNS else how)
    if data is not None:
        evaluator = Evaluator(members[0], data, max_examples, pick_device(device))

        def metrics(model: TransformerModel) -> dict:
            m: Metrics = evaluator(evaluator.hf_params(model))
            return {"loss": m.loss, "accuracy": m.accuracy, **({"macro_f1": m.macro_f1} if m.macro_f1 is not None
                                                                else {})}

        # a soft plan changes a carried model's function: the inputs are measured as they were given
        inputs = members[:1] + [canonicalize(m) for m in models[1:]] if how_align in OT_ALIGNS else members
        report["inputs"] = [{"model": src.source, **metrics(m)} for src, m in zip(models, inputs)]
        if how_align in OT_ALIGNS:  # and what the plans made of them (equal to the inputs when plans are hard)
            report["carried"] = [{"model": src.source, **metrics(m)} for src, m in zip(models[1:], members[1:])]
        report["merged"] = metrics(merged)
    return MergeResult(merged, report, members if keep_members else None)



def _ot_json(ot, how_align: str) -> dict:
    """The OT solver as recorded (Imfeld et al.'s Sinkhorn strength for the method when none is given)."""
    from symalign.merge.ot_fusion import OTSettings

    ot = ot or OTSettings()
    return {"solver": ot.solver, "reg": ot.strength(how_align) if ot.solver == "sinkhorn" else None}
