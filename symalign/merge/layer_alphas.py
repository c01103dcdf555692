"""A task vector's scale learned per layer on a few labelled examples (TransFusion's Table 4, after Zhang et
al. 2024): B + Σ_l α_l·τ_l, one α per layer started at 1 (the transport as it is) and fitted by gradient
descent on `shots` examples of each class from the task's training split. Where data may be kept, this is
the cheap complement to a data-free transport: it rescales what moved, it learns nothing new.

A layer is a transformer block (`layer.i.*`); the embeddings, the final norm and the head are a layer each."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.func import functional_call

from symalign.data.splits import split_view
from symalign.errors import SymalignError
from symalign.landscape.evaluate import Evaluator, batch_loss, scored
from symalign.models.family import TransformerModel

SHOTS = 10  # per class, as the paper (10 shots per class)
STEPS = 100  # full-batch Adam steps on the few shots
LEARNING_RATE = 0.01  # with STEPS: α moves about 1 at most from where it starts (no runaway on 10 shots)
CLASSIFIERS = ("image-classification", "sequence-classification")


def layer_of(name: str) -> str:
    """The layer a canonical tensor belongs to: `layer.3.mlp.up.weight` → `layer.3`, `embed.token` → `embed`."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "layer" else parts[0]


def check_few_shot(model: TransformerModel, shots: int) -> None:
    """One line, before any work, for a few-shot α that cannot be learned: no classes, or no shots."""
    if model.family.task not in CLASSIFIERS:
        raise SymalignError(f"a few-shot α needs a classifier's labels (shots per class); {model.family.name} is a "
                            f"{model.family.task} model")
    if shots < 1:
        raise SymalignError(f"--few-shot needs at least 1 example per class; got {shots}")


def few_shots(data, model: TransformerModel, shots: int = SHOTS) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The first `shots` training examples of every class (the training split read in its fixed order: the
    same examples in every process)."""
    check_few_shot(model, shots)
    taken: dict[int, int] = {}
    inputs: list[dict[str, torch.Tensor]] = []
    targets: list[torch.Tensor] = []
    for x, y in split_view(data, "train").eval_batches(model):
        keep = []
        for i, label in enumerate(y.tolist()):
            if taken.get(label, 0) < shots:
                taken[label] = taken.get(label, 0) + 1
                keep.append(i)
        if keep:
            index = torch.tensor(keep)
            inputs.append({k: v[index] for k, v in x.items()})
            targets.append(y[index])
    if not targets:
        raise SymalignError("the task's training split holds no labelled examples")
    return {k: torch.cat([x[k] for x in inputs]) for k in inputs[0]}, torch.cat(targets)


def fit_layer_alphas(receiver: TransformerModel, tau: dict[str, torch.Tensor], data, shots: int = SHOTS,
                     steps: int = STEPS, lr: float = LEARNING_RATE, device: str = "cpu",
                     progress: Callable[[str, int, int], None] | None = None) -> dict[str, float]:
    """Per layer, the α that minimises the loss of receiver + Σ α_l·τ_l on `shots` examples per class of
    `data`'s training split (full batch, Adam from α = 1). `tau`: canonical names, as task_vector_in gives it."""
    layers = sorted({layer_of(n) for n in tau})
    evaluator = Evaluator(receiver, data, 1, device)  # the module and its parameter names (its batch unused)
    base = evaluator.hf_params(receiver)
    directions = {}
    for layer in layers:  # τ_l in the module's own parameters: the layout change is linear, so a difference
        moved = receiver.with_tensors({n: (t.double() + tau[n]).to(t.dtype) if layer_of(n) == layer and n in tau
                                       else t for n, t in receiver.tensors.items()})
        directions[layer] = {k: v - base[k] for k, v in evaluator.hf_params(moved).items()
                             if not torch.equal(v, base[k])}
    x, y = few_shots(data, receiver, shots)
    x, y = {k: v.to(evaluator.device) for k, v in x.items()}, y.to(evaluator.device)
    alpha = torch.ones(len(layers), dtype=torch.float32, device=evaluator.device, requires_grad=True)
    optimiser = torch.optim.Adam([alpha], lr=lr)
    count = scored(y)
    for step in range(steps):  # the module is in eval mode (no dropout): the same α in every run
        params = dict(base)
        for i, layer in enumerate(layers):
            for k, d in directions[layer].items():
                params[k] = params[k] + alpha[i] * d
        logits = functional_call(evaluator.module, params, args=(), kwargs=x).logits
        loss = batch_loss(logits, y)[0] / count
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if progress:
            progress("few-shot α", step + 1, steps)
    return {layer: float(a) for layer, a in zip(layers, alpha.detach().cpu())}


def scaled(receiver: TransformerModel, tau: dict[str, torch.Tensor], alphas: dict[str, float]) -> TransformerModel:
    """receiver + Σ_l α_l·τ_l (a layer without an α keeps its τ at 1)."""
    return receiver.with_tensors({n: (t.double() + alphas.get(layer_of(n), 1.0) * tau[n]).to(t.dtype) if n in tau
                                  else t for n, t in receiver.tensors.items()})
