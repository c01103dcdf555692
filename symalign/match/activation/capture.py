"""Activations at the points activation matching reads, one evaluation batch at a time.

Keys: residual.j (hidden state j, the embeddings at j = 0), layer.i.mlp (the down projection's
input), layer.i.heads (the output projection's input: every head's output), layer.i.q and
layer.i.k (key/value heads only). Every key is [rows, features] with rows = token positions.

Why batches: a whole model's activations over a data set do not fit beside a real model
(GPT-2-small at 20,000 positions: about 6 GB per model in float32). The matchers read only
second moments, which add up batch by batch (symalign.match.activation.moments), so they never need more
than one batch of each model at once. `collect` keeps the old whole-set view for the
diagnostics that read samples (feature correlations, Verma's Ignore-Heads)."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from symalign.match.weight.running import PrecisionView
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models.family import TransformerModel
from symalign.models.functional import functional_params, module_names, weightless_module

MAX_ROWS = 20_000  # positions read per key: enough for every solve's statistics, and a bound on the data pass


@torch.no_grad()
def activation_batches(model: TransformerModel, data, max_examples: int | None = 256,
                       device: torch.device | str = "cpu") -> Iterator[dict[str, torch.Tensor]]:
    """Each evaluation batch's activations {key: [rows, features]} on the CPU in the model's precision,
    the last batch cut so that no more than MAX_ROWS rows are read in all. The forward passes run on
    `device`; the pass stops once it has the rows. Two of these can run in lockstep on one module (a
    model aligned with itself): each batch starts from an empty store and yields its own dict. The
    module holds no weights of its own (torch.func on the model's tensors; at real scale on the
    layout's views, as symalign.models.functional.logits_of), so a pass costs no copy of the model."""
    from torch.func import functional_call

    module = weightless_module(model, fused=False).to(device)
    large = sum(t.numel() for t in model.tensors.values()) > LARGE_MODEL_PARAMETERS  # the zoo keeps its layout
    params = {k: v.to(device) for k, v in functional_params(model.family, model.config, model.tensors,
                                                            module_names(module), contiguous=not large).items()}
    dims = model.dims
    store: dict[str, list[torch.Tensor]] = {}
    handles = []

    def keep(key):
        def pre_hook(_, args):
            store.setdefault(key, []).append(args[0].detach().reshape(-1, args[0].shape[-1]).cpu())
        return pre_hook

    def keep_out(keys, fused=False):
        def hook(_, __, out):
            flat = out.detach().reshape(-1, out.shape[-1]).cpu()
            parts = (split_qkv(flat, dims.n_head, model.family.fused_qkv, dim=-1, n_kv_head=dims.kv_heads) if fused
                     else (flat,))
            for key, part in zip(keys, parts):
                store.setdefault(key, []).append(part)
        return hook

    modules = dict(module.named_modules())
    for i in range(dims.n_layer):
        points = {k: v.format(i=i) for k, v in model.family.hook_points.items()}
        handles.append(modules[points["mlp"]].register_forward_pre_hook(keep(f"layer.{i}.mlp")))
        handles.append(modules[points["heads"]].register_forward_pre_hook(keep(f"layer.{i}.heads")))
        if "qkv" in points:
            handles.append(modules[points["qkv"]].register_forward_hook(keep_out([f"layer.{i}.q", f"layer.{i}.k"],
                                                                                 fused=True)))
        else:
            handles.append(modules[points["q"]].register_forward_hook(keep_out([f"layer.{i}.q"])))
            handles.append(modules[points["k"]].register_forward_hook(keep_out([f"layer.{i}.k"])))
    rows = 0
    try:
        for inputs, _ in data.eval_batches(model, max_examples):
            store.clear()
            kwargs = {**{k: v.to(device) for k, v in inputs.items()}, "output_hidden_states": True}
            hidden = functional_call(module, params, args=(), kwargs=kwargs).hidden_states
            # the residual stream's states (OPT's last one is past project_out, in the embeddings' width)
            batch = {f"residual.{j}": h.reshape(-1, h.shape[-1]).cpu() for j, h in enumerate(hidden)
                     if h.shape[-1] == dims.d_model}
            batch.update((key, torch.cat(parts)) for key, parts in store.items())
            store.clear()
            take = min(MAX_ROWS - rows, batch["residual.0"].shape[0])
            rows += take
            yield {key: t[:take] for key, t in batch.items()}
            if rows >= MAX_ROWS:  # the solves read the first MAX_ROWS rows: later batches would be dropped
                break
    finally:
        for h in handles:
            h.remove()


def residual_keys(keys) -> list[str]:
    """The residual streams among `keys`, in depth order (residual.10 after residual.9)."""
    return sorted((k for k in keys if k.startswith("residual.")), key=lambda k: int(k.split(".")[1]))


def collect(model: TransformerModel, data, max_examples: int | None = 256,
            device: torch.device | str = "cpu") -> PrecisionView:
    """Every batch's activations joined: residual.j and layer.i.mlp as [rows, n], layer.i.{heads,q,k}
    as [rows, heads, d_head] (k: key/value heads only), read as float64 one at a time. For what reads
    samples; the matchers read moments (symalign.match.activation.moments), which need one batch at a time."""
    store: dict[str, list[torch.Tensor]] = {}
    for batch in activation_batches(model, data, max_examples, device):
        for key, t in batch.items():
            store.setdefault(key, []).append(t)
    out = {}
    for key in list(store):  # one key's chunks and its concatenation at a time, not every key's twice
        out[key] = torch.cat(store.pop(key))
        if not key.startswith("residual") and not key.endswith(".mlp"):
            out[key] = out[key].reshape(out[key].shape[0], -1, model.dims.d_head)
    return PrecisionView(out, torch.float64)


LAYOUTS = ("blocks", "per-head")


def split_qkv(x: torch.Tensor, n_head: int, layout: str, dim: int = 0,
              n_kv_head: int | None = None) -> tuple[torch.Tensor, ...]:
    """(q, k, v) from a fused axis `dim` (heads in order). `blocks` with fewer key/value heads than
    query heads (Phi-3 with grouped queries) has parts of n_head, n_kv_head and n_kv_head heads."""
    if layout == "blocks":
        kv = n_kv_head or n_head
        d_head = x.shape[dim] // (n_head + 2 * kv)
        return x.split([n_head * d_head, kv * d_head, kv * d_head], dim=dim)
    if layout == "per-head":
        dim = dim % x.dim()
        d_head = x.shape[dim] // (3 * n_head)
        parts = x.unflatten(dim, (n_head, 3, d_head))
        return tuple(parts.select(dim + 1, j).flatten(dim, dim + 1) for j in range(3))
    raise ValueError(f"unknown fused QKV layout {layout!r}; choose from {', '.join(LAYOUTS)}")
