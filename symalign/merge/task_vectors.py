"""Task-vector transport (TransFusion): move what fine-tuning taught model A into model B.

Given a base A, its fine-tune A′ and another model B of the same architecture, the task vector
τ = A′ − A lives in A's basis; B's units, heads and residual directions are others. Aligning A to B
gives a transform π with π(A) ≈ B; since A′ is a small step from A, the same π re-expresses A′ in
B's basis, and B + α·(π(A′) − π(A)) carries the task over. Everything is in canonical form (the
same function as the originals); α = 0 is B itself, exactly. `--align none` adds A′ − A as it is,
for contrast."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from symalign.data import load_data
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.evaluate import Evaluator
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.merge.layer_alphas import check_few_shot, fit_layer_alphas, scaled
from symalign.merge.merge_rule import TRANSPORT_ALIGNS, TRANSPORT_HEAD_STRATEGIES
from symalign.merge.ot_fusion import ot_task_vector
from symalign.merge.verma_relabellings import relabel_streams, weight_stream_permutations
from symalign.models import canonicalize, save_model, transformed
from symalign.models.compat import HEAD, check_compatible, fine_tune_tensors
from symalign.models.family import TransformerModel
from symalign.progress import phase

Progress = Callable[[str, int, int], None]


def parse_alphas(text: str) -> list[float]:
    """'0,0.25,0.5' → [0.0, 0.25, 0.5]; anything else is one clear error."""
    try:
        alphas = [float(a) for a in text.split(",") if a.strip()]
    except ValueError:
        raise SymalignError(f"--alpha {text!r} does not parse: "
                            "give numbers separated by commas, e.g. 0,0.5,1") from None
    if not alphas or not all(math.isfinite(a) for a in alphas):
        raise SymalignError(f"--alpha {text!r}: give one or more finite numbers separated by commas")
    return alphas


def check_transport(a: TransformerModel, a_ft: TransformerModel, b: TransformerModel, alphas: list[float],
                    how_align: str, per_block: bool = False) -> None:
    """Refuse what cannot be transported, before anything runs or is recorded."""
    if how_align not in TRANSPORT_ALIGNS:
        raise SymalignError(f"unknown --align {how_align!r}; choose {', '.join(TRANSPORT_ALIGNS)}")
    _check_per_block(how_align, per_block)
    check_compatible(a, b)
    try:
        fine_tune_tensors(a, a_ft)
    except SymalignError as exc:
        raise type(exc)(f"the fine-tune does not match its base: {exc}") from None
    if not alphas:
        raise SymalignError("give at least one α")


def _check_per_block(how_align: str, per_block: bool) -> None:
    """The residual per block follows a matcher's alignment: without one there is nothing to permute after."""
    if per_block and how_align in ("none", "ot-wts"):
        raise SymalignError(f"--residual-per-block permutes after a matcher's alignment; --align {how_align} has none")


def with_head_strategy(config: AlignConfig, strategy: str) -> AlignConfig:
    """The alignment with TransFusion's head strategy (Table 3): none keeps the heads in order (the maps
    inside them are still aligned); circuit, spectral and brute-force pair them by that head cost."""
    if strategy not in TRANSPORT_HEAD_STRATEGIES:
        raise SymalignError(f"unknown head strategy {strategy!r}; choose {', '.join(TRANSPORT_HEAD_STRATEGIES)}")
    config = copy.copy(config)  # not dataclasses.replace: __post_init__ would reset a preset's classes
    if strategy == "none":
        config.classes = {**config.classes, "heads": "none"}
    else:
        config.head_cost = strategy
    return config


@dataclass
class Transport:
    alphas: list[float]
    task_loss: list[float]
    base_loss: list[float]
    task_accuracy: list[float]
    models: list[TransformerModel] = field(repr=False)  # B + α·τ for each α (canonical form)
    report: dict = field(default_factory=dict)
    base_accuracy: list[float] = field(default_factory=list)  # the support set: the original task's accuracy
    # with few shots (`shots`): the α learned per layer, and B + Σ α_l·τ_l's task and support metrics
    layer_alphas: dict[str, float] = field(default_factory=dict)
    fitted: dict[str, float] = field(default_factory=dict)

    @property
    def best_alpha(self) -> float:
        """The α with the lowest task loss."""
        return self.alphas[min(range(len(self.alphas)), key=self.task_loss.__getitem__)]

    def save(self, out: str | Path, dtype: str = "auto") -> Path:
        """The checkpoint at the best α (a plain Hugging Face directory)."""
        import json

        out = save_model(self.models[self.alphas.index(self.best_alpha)], out, dtype)
        (out / "transport.json").write_text(json.dumps(self.report, indent=2))
        return out


def with_residual_per_block(config: AlignConfig) -> AlignConfig:
    """The alignment without its whole-stream residual class: the residual is then permuted per block
    (task_vector_in's `per_block`), TransFusion's eq. 12."""
    config = copy.copy(config)  # as with_head_strategy: a preset's classes kept
    config.classes = {**config.classes, "residual": "none"}
    return config


def task_vector_in(b: TransformerModel, a: TransformerModel, a_ft: TransformerModel, how_align: str,
                   data_spec: str | None, seed: int = 0, progress: Progress | None = None,
                   device: str = "cpu", config: AlignConfig | None = None,
                   per_block: bool = False) -> dict[str, torch.Tensor]:
    """τ = π(A′) − π(A) in B's canonical basis (π the alignment of A to B; identity for 'none').
    `config`: the alignment in full (classes, options); None: all classes at the method's defaults.
    `per_block`: TransFusion's residual (its eq. 12): after the alignment without a residual class, one
    permutation per residual stream from the weights (symalign.merge.verma_relabellings), where the
    skip connections would carry the composed permutations; τ needs the weights only."""
    _check_per_block(how_align, per_block)
    if how_align == "ot-wts":  # exact plans: permutations at equal widths (symalign.merge.ot_fusion)
        return ot_task_vector(b, a, a_ft)
    names, _ = fine_tune_tensors(a, a_ft)  # a fine-tune with a new head (a classifier): its body's task vector
    canon_a, canon_ft = canonicalize(a), canonicalize(a_ft)
    if how_align == "none":
        moved_a, moved_ft = canon_a, canon_ft
    else:
        config = config or AlignConfig(method=how_align, preset="all", data=data_spec, seed=seed, device=device)
        config = with_residual_per_block(config) if per_block else config
        result = align(b, a, config, progress=phase(progress, "align"))
        moved_a, moved_ft = result.aligned, transformed(canon_ft, result.transform)
        if per_block:
            perms = weight_stream_permutations(canonicalize(b), moved_a)
            moved_a, moved_ft = relabel_streams(moved_a, perms), relabel_streams(moved_ft, perms)
    return {n: moved_ft.tensors[n].double() - moved_a.tensors[n].double() for n in names}


def _plus(model: TransformerModel, tau: dict[str, torch.Tensor], alpha: float) -> TransformerModel:
    """model + α·τ on the tensors τ holds (α = 0: the model itself, exactly)."""
    return model.with_tensors({n: (t.double() + alpha * tau[n]).to(t.dtype) if alpha and n in tau else t
                               for n, t in model.tensors.items()})


def _tied(model: TransformerModel, tau: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """τ as it moves `model`: a head tied to the token embedding is that one parameter, so it moves with it
    (a body's task vector holds the embedding's change, not the head's)."""
    if getattr(model.config, "tie_word_embeddings", False) and "embed.token" in tau and "head.weight" not in tau:
        return {**tau, "head.weight": tau["embed.token"]}
    return tau


def with_head_of(body: TransformerModel, fine_tune: TransformerModel) -> TransformerModel:
    """`body`'s encoder under the fine-tune's own head, as it is (canonical forms): TransFusion's ω_ft, the
    classifier re-used on the new feature extractor because no task data is there to train another."""
    tuned = canonicalize(fine_tune)
    return tuned.with_tensors({n: t if n.startswith(HEAD) else body.tensors[n] for n, t in tuned.tensors.items()})


def transport(a: TransformerModel, a_ft: TransformerModel, b: TransformerModel, alphas: list[float],
              data_task: str, data_base: str, how_align: str = "weight", align_data: str | None = None,
              max_examples: int | None = None, seed: int = 0, progress: Progress | None = None,
              device: str = "cpu", config: AlignConfig | None = None, shots: int = 0,
              per_block: bool = False) -> Transport:
    """B + α·τ for every α, with the fine-tune task's and the original task's (the support set's)
    evaluation loss and accuracy (alignment and evaluation on `device`: cpu, cuda, mps or auto).
    `config`: the alignment's classes and options (task_vector_in). A fine-tune with a head of its own (an
    encoder fine-tuned into a classifier) moves its body's task vector, and B is scored on the task with the
    fine-tune's head as it is, unmoved, and on the support set with B's own head (TransFusion's Table 2).
    `shots` > 0: also τ scaled per layer by an α learned on that many training examples per class of the task
    (TransFusion's Table 4; symalign.merge.layer_alphas), scored as `fitted`. `per_block`: the residual
    permuted per block, as TransFusion (task_vector_in)."""
    check_transport(a, a_ft, b, alphas, how_align, per_block)
    if shots:
        check_few_shot(a_ft, shots)
    task, base = load_data(data_task), load_data(data_base)
    tau = task_vector_in(b, a, a_ft, how_align, align_data or data_base, seed, progress, device, config, per_block)
    canon_b = canonicalize(b)
    supports = [_plus(canon_b, _tied(canon_b, tau), alpha) for alpha in alphas]
    receiver = with_head_of(canon_b, a_ft) if fine_tune_tensors(a, a_ft)[1] else canon_b
    models = [_plus(receiver, tau, alpha) for alpha in alphas] if receiver is not canon_b else supports
    where = pick_device(device)
    task_eval = Evaluator(receiver, task, max_examples, where)
    base_eval = Evaluator(canon_b, base, max_examples, where)
    task_loss, base_loss, task_acc, base_acc = [], [], [], []
    for i, (model, support) in enumerate(zip(models, supports)):
        t = task_eval(task_eval.hf_params(model))
        task_loss.append(t.loss)
        task_acc.append(t.accuracy)
        o = base_eval(base_eval.hf_params(support))
        base_loss.append(o.loss)
        base_acc.append(o.accuracy)
        if progress:
            progress("evaluate", i + 1, len(models))
    result = Transport(alphas, task_loss, base_loss, task_acc, models, base_accuracy=base_acc)
    if shots:
        result.layer_alphas = fit_layer_alphas(receiver, tau, task, shots, device=device, progress=progress)
        t = task_eval(task_eval.hf_params(scaled(receiver, tau, result.layer_alphas)))
        o = base_eval(base_eval.hf_params(scaled(canon_b, _tied(canon_b, tau), result.layer_alphas)))
        result.fitted = {"task_loss": t.loss, "task_accuracy": t.accuracy, "base_loss": o.loss,
                         "base_accuracy": o.accuracy, "shots": shots}
    result.report = {"a": a.source, "a_ft": a_ft.source, "b": b.source, "align": how_align, "alpha": alphas,
                     "task_loss": task_loss, "base_loss": base_loss, "task_accuracy": task_acc,
                     "base_accuracy": base_acc, "best_alpha": result.best_alpha, "data_task": data_task,
                     "data_base": data_base}
    if config is not None:
        result.report["alignment"] = config.matcher_json()
    result.report["residual_per_block"] = per_block
    if shots:
        result.report |= {"layer_alphas": result.layer_alphas, "few_shot": result.fitted}
    return result
