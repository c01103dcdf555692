"""Diagonal Fisher information of a model on its data, as logical tensors (for Fisher merging).

The empirical Fisher F = E_x[(∂ log p(y|x) / ∂θ)²] with the data's own labels, one example at a
time (a sequence, for text), on training examples drawn with a fixed seed. It is computed on the
Hugging Face parameters and mapped to the logical layout by the family adapter: that mapping only
rearranges entries, so squared gradients move with their weights."""

from __future__ import annotations

from collections.abc import Callable

import torch

from symalign.landscape.evaluate import batch_loss, scored
from symalign.merge.merge_rule import MergeInputs
from symalign.models.family import TransformerModel

Progress = Callable[[int, int], None]


def diagonal_fisher(model: TransformerModel, data, examples: int = 64, seed: int = 0,
                    progress: Progress | None = None, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Per-tensor diagonal Fisher (float64, the logical layout of `model`, on the CPU); the gradients
    are taken on `device`."""
    data.check_model(model)
    module = model.to_module().to(device)
    params = dict(module.named_parameters())
    total = {name: torch.zeros_like(p, dtype=torch.float64) for name, p in params.items()}
    inputs, targets = data.train_batch(model, examples, torch.Generator().manual_seed(seed))
    inputs, targets = {k: v.to(device) for k, v in inputs.items()}, targets.to(device)
    for i in range(len(targets)):
        module.zero_grad(set_to_none=True)
        logits = module(**{k: v[i:i + 1] for k, v in inputs.items()}).logits
        y = targets[i:i + 1]
        if logits.dim() == 3:
            logits = logits[:, : y.shape[1]]
        loss, _ = batch_loss(logits, y)
        loss = loss / max(scored(y), 1)
        loss.backward()
        for name, p in params.items():
            if p.grad is not None:
                total[name] += p.grad.double() ** 2
        if progress:
            progress(i + 1, len(targets))
    state = {name: (t / len(targets)).cpu() for name, t in total.items()}
    if "lm_head.weight" not in state and "transformer.wte.weight" in state:
        state["lm_head.weight"] = state["transformer.wte.weight"]  # tied: one tensor, one Fisher
    return model.family.to_logical(state, model.config)


def fisher_merge(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `fisher` rule (Matena & Raffel): Σ F_i θ_i / Σ F_i per weight, each model's diagonal Fisher on
    its training data, ε-floored so a weight no model is sure of falls back to the mean."""
    fishers = [diagonal_fisher(m, inputs.data, inputs.examples, inputs.seed, inputs.phase(f"Fisher of model {i}"),
                               inputs.device) for i, m in enumerate(members)]
    out = {}
    for n, t in members[0].tensors.items():
        f = torch.stack([fi[n] for fi in fishers])
        f = f + 1e-8 * f.mean().clamp_min(1e-30)  # a weight with no information falls back to the mean
        theta = torch.stack([m.tensors[n].double() for m in members])
        out[n] = ((f * theta).sum(0) / f.sum(0)).to(t.dtype)
    return out
