"""Recorded merges and task-vector transports: the merged (or best-α) checkpoint saved and measured."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from symalign.errors import SymalignError
from symalign.merge.merge_rule import OT_ALIGNS
from symalign.models.canonical import canonicalize
from symalign.models.compat import check_compatible
from symalign.models.io import default_data_spec, export_dtype
from symalign.progress import PhaseProgress
from symalign.runs.recording import ModelLike, loaded_here, model_of, recorded, reference
from symalign.runs.settings import MergeSettings, TransportSettings
from symalign.runs.store import RunStore

if TYPE_CHECKING:
    from symalign.match.config import AlignConfig
    from symalign.merge import MergeResult, Transport


def merge_alignment(how_align: str, classes: dict | None, data: str | None) -> AlignConfig | None:
    """The matcher's config for classes chosen one by one (the Merge page, its jobs); None: all classes."""
    if not classes or how_align in ("none", *OT_ALIGNS):
        return None
    from symalign.match.config import AlignConfig

    return AlignConfig(method=how_align, classes=classes, data=data)


def head_strategy_alignment(how_align: str, strategy: str | None, data: str | None) -> AlignConfig | None:
    """A transport's alignment with TransFusion's head strategy (all classes; the Merge page's transport
    tab and its jobs); None for the default (circuit) or no alignment."""
    if how_align == "none" or strategy in (None, "circuit"):
        return None
    from symalign.match.config import AlignConfig
    from symalign.merge.task_vectors import with_head_strategy

    return with_head_strategy(AlignConfig(method=how_align, preset="all", data=data), strategy)


@dataclass
class MergeRun:
    run_id: str | None
    result: MergeResult
    out: Path


def merge_run(refs: list[ModelLike], how_align: str = "weight", how: str = "average", data: str | None = None,
              examples: int = 64, max_examples: int | None = None, seed: int = 0, out: str | Path | None = None,
              store: RunStore | None = None, source: str = "api", label: str = "",
              progress: PhaseProgress | None = None, dtype: str = "auto", device: str = "auto",
              base: ModelLike | None = None, parameters: dict | None = None, export_inputs: bool = False,
              ot: dict | None = None, alignment: AlignConfig | None = None, keep_head: bool = False) -> MergeRun:
    """Merge models (symalign.merge), save the checkpoint and record a `merge` run with the inputs'
    and merged model's evaluation metrics. Without `out`, the checkpoint goes to runs/<id>. `base`:
    for the rules that need one (it leads: the others are aligned into its basis); `parameters`: the
    rule's; `export_inputs`: also write the aligned inputs and a mergekit.yml (MergeResult.export_inputs);
    `ot`: OT fusion's {"solver", "reg"} for `how_align` or `how` ot-acts / ot-wts; `alignment`: the
    matcher's classes and options (None: all classes at its defaults), recorded with the run; `keep_head`:
    the first model's output head kept, not merged (merge_models)."""
    from symalign.merge.merging import check_rule, merge_models
    from symalign.merge.ot_fusion import OTSettings

    refs = ([base] if base is not None else []) + list(refs)
    if len(refs) < 2:
        raise SymalignError(f"merge needs at least two models (got {len(refs)})")
    check_rule(how, len(refs), base is not None, parameters)  # before any model loads
    ot_settings = OTSettings(**(ot or {}))
    ot_settings.check()
    models = [model_of(m) for m in refs]
    for other in models[1:]:
        check_compatible(models[0], other)
    if how_align.startswith("ot-"):
        from symalign.merge.ot_fusion import check_fusable

        check_fusable(models[0])
    # every merge reads canonical forms only: a model loaded here is folded in place of its raw tensors, so the
    # raw and the canonical model never both stay (a real checkpoint: 4 bytes per parameter each)
    models = [canonicalize(m, consume=loaded_here(r)) for m, r in zip(models, refs)]
    spec = data or default_data_spec(models[0])
    names = [reference(m) for m in refs]
    export_dtype(models[0], dtype)  # an unknown dtype is refused before any work
    settings = MergeSettings(how_align, how, spec, examples, max_examples, seed, owns_artifacts=out is None,
                             dtype=dtype,
                             device=device, base=names[0] if base is not None else None, parameters=parameters or {},
                             ot={k: v for k, v in (ot or {}).items() if v is not None},
                             alignment=alignment.matcher_json() if alignment is not None else {},
                             keep_head=keep_head)
    with recorded(store, "merge", names[0], names[1], how_align, settings, source, label, names) as run:
        result = merge_models(models[1:] if base is not None else models, how_align, how, spec, examples=examples,
                              max_examples=max_examples, seed=seed, progress=progress, device=device,
                              base=models[0] if base is not None else None, parameters=parameters,
                              keep_members=export_inputs, ot=ot_settings, alignment=alignment, keep_head=keep_head)
        out = run.folder(out)
        saved = result.save(out, dtype)
        if export_inputs:
            result.export_inputs(saved)
        run.finish({"how": how, "align": how_align, "parameters": result.report["parameters"],
                    "base": result.report["base"], "inputs": result.report["inputs"],
                    "merged": result.report["merged"],
                    **{k: result.report[k] for k in ("carried", "ot", "alignment") if k in result.report}}, saved)
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
                  device: str = "auto", alignment: AlignConfig | None = None, few_shot: int = 0,
                  residual_per_block: bool = False) -> TransportRun:
    """Task-vector transport (symalign.merge.task_vectors), the best-α checkpoint saved, recorded as a
    `transport` run (α, both tasks' losses and accuracies, best α). Without `out`, the checkpoint goes
    to runs/<id>. `alignment`: the matcher's classes and options (None: all classes at its defaults).
    `few_shot` > 0: also a per-layer α learned on that many training examples per class of the task
    (symalign.merge.layer_alphas), recorded beside the α grid. `residual_per_block`: TransFusion's residual,
    a permutation per residual stream (symalign.merge.task_vectors.task_vector_in)."""
    from symalign.merge.layer_alphas import check_few_shot
    from symalign.merge.task_vectors import check_transport, transport

    model_a, model_ft, model_b = model_of(a), model_of(a_ft), model_of(b)
    check_transport(model_a, model_ft, model_b, alphas, how_align, residual_per_block)
    if few_shot:
        check_few_shot(model_ft, few_shot)
    export_dtype(model_b, dtype)  # an unknown dtype is refused before any work
    data_task = data_task or default_data_spec(model_ft)
    data_base = data_base or default_data_spec(model_a)
    settings = TransportSettings(reference(a_ft), how_align, alphas, data_task, data_base, max_examples, seed,
                                 owns_artifacts=out is None, dtype=dtype, device=device,
                                 alignment=alignment.matcher_json() if alignment is not None else {},
                                 few_shot=few_shot, residual_per_block=residual_per_block)
    names = [reference(a), reference(b), reference(a_ft)]
    with recorded(store, "transport", names[0], names[1], how_align, settings, source, label, names) as run:
        result = transport(model_a, model_ft, model_b, alphas, data_task, data_base, how_align,
                           max_examples=max_examples, seed=seed, progress=progress, device=device, config=alignment,
                           shots=few_shot, per_block=residual_per_block)
        out = run.folder(out)
        saved = result.save(out, dtype)
        run.finish({k: result.report[k] for k in ("alpha", "task_loss", "base_loss", "task_accuracy", "base_accuracy",
                                                  "best_alpha", "alignment", "layer_alphas", "few_shot",
                                                  "residual_per_block")
                    if k in result.report}, saved)
    return TransportRun(run.id, result, saved)
