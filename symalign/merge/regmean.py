"""RegMean (Jin et al., "Dataless knowledge fusion"): for every linear map, the weights that best
reproduce all members' outputs on their own inputs, W = (Σ W_i G_i)(Σ G_i)⁻¹, where G_i = Xᵢᵀ Xᵢ is
the Gram matrix of member i's inputs to that map (off-diagonal entries scaled by α for stability).

Done on the Hugging Face modules of the members (which already share one basis): every
`nn.Linear` and GPT-2 `Conv1D` gets a forward hook that accumulates its input Gram matrix; the
other parameters (embeddings, biases, norms, and an output head tied to the token embedding) are
averaged; the result is mapped back to the
logical layout by the family adapter. Nothing family-specific is needed."""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers.pytorch_utils import Conv1D

from symalign.merge.merge_rule import MergeInputs
from symalign.models.family import TransformerModel

Progress = Callable[[int, int], None]


@torch.no_grad()
def input_grams(model: TransformerModel, inputs: dict[str, torch.Tensor], chunk: int = 16,
                device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """{module name: Σ x xᵀ over every input row} for the model's linear maps (float64, on the CPU;
    the forward passes and products run on `device`)."""
    module = model.to_module().to(device)
    grams: dict[str, torch.Tensor] = {}
    hooks = []
    for name, sub in module.named_modules():
        if isinstance(sub, (torch.nn.Linear, Conv1D)):
            def hook(_, args, name=name):
                x = args[0].reshape(-1, args[0].shape[-1]).double()
                grams[name] = grams.get(name, 0) + x.T @ x
            hooks.append(sub.register_forward_pre_hook(hook))
    try:
        count = len(next(iter(inputs.values())))
        for i in range(0, count, chunk):
            module(**{k: v[i:i + chunk].to(device) for k, v in inputs.items()})
    finally:
        for h in hooks:
            h.remove()
    return {name: g.cpu() for name, g in grams.items()}


def regmean(members: list[TransformerModel], data, examples: int = 64, seed: int = 0,
            progress: Progress | None = None, alpha: float = 0.9,
            device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Merged logical tensors of `members` (same architecture, one basis)."""
    inputs, _ = data.train_batch(members[0], examples, torch.Generator().manual_seed(seed))
    grams = []
    for i, m in enumerate(members):
        grams.append(input_grams(m, inputs, device=device))
        if progress:
            progress(i + 1, len(members))
    states = [m.family.from_logical(m.tensors, m.config) for m in members]
    merged = {k: torch.stack([s[k].double() for s in states]).mean(0).to(v.dtype) for k, v in states[0].items()}
    module = members[0].to_module()
    embedding = getattr(module.get_input_embeddings(), "weight", None)  # a ViT's patch embedding has none
    for name, sub in module.named_modules():
        key = f"{name}.weight"
        if name not in grams[0] or key not in merged:
            continue
        if embedding is not None and sub.weight.data_ptr() == embedding.data_ptr():
            continue  # a head tied to the token embedding is also a lookup table: it stays averaged, and tied
        g = [alpha * gi[name] + (1 - alpha) * torch.diag(torch.diagonal(gi[name])) for gi in grams]
        den = sum(g)
        den = den + 1e-10 * torch.diagonal(den).mean().clamp_min(1e-30) * torch.eye(den.shape[0], dtype=den.dtype)
        if isinstance(sub, Conv1D):  # weight [in, out]: y = x W
            num = sum(gi @ s[key].double() for gi, s in zip(g, states))
            merged[key] = torch.linalg.solve(den, num).to(states[0][key].dtype)
        else:  # nn.Linear, weight [out, in]: y = x Wᵀ
            num = sum(s[key].double() @ gi for gi, s in zip(g, states))
            merged[key] = torch.linalg.solve(den, num.T).T.to(states[0][key].dtype)
    return members[0].family.to_logical(merged, members[0].config)


def regmean_merge(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `regmean` rule (symalign.merge.builtin_rules)."""
    return regmean(members, inputs.data, inputs.examples, inputs.seed, inputs.phase("input Gram matrices"),
                   device=inputs.device)
