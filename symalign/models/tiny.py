"""Tiny randomly initialised GPT-2 / ViT / Llama (Qwen2) / BERT models: for the demo, the docs and the tests.

Every parameter is random (LayerNorm gains and all biases included), so symmetry and
canonical-form checks cannot pass by accident on an all-ones gain or an all-zero bias."""

from __future__ import annotations

import torch

from symalign.models.family import TransformerModel
from symalign.models.io import FAMILIES, _quiet_transformers, family_of


def tiny_config(family: str, **options):
    """A Hugging Face config for a small model of the family: layers, width, heads, mlp, activation, tied,
    qkv_bias, vocab, context (text), image_size, patch, channels, labels (images), kv_heads,
    attention_bias, mlp_bias (Llama), rotary (fraction of each head RoPE rotates), parallel (residual;
    GPT-NeoX); each family reads the options that apply to it."""
    _quiet_transformers()
    if family not in FAMILIES or FAMILIES[family].tiny is None:
        raise ValueError(f"unknown family {family!r}; small models of: {', '.join(tiny_families())}")
    return FAMILIES[family].tiny(**options)


def tiny_families() -> tuple[str, ...]:
    """The families symalign can build small models of (`symalign init`, the tests over every family)."""
    return tuple(name for name, family in FAMILIES.items() if family.tiny is not None)


def random_model(config, seed: int = 0) -> TransformerModel:
    """A model with every parameter drawn at random (fan-in scaled), LayerNorms perturbed."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    module = family_of(config).hf_class(config)
    state = {}
    for name, t in module.state_dict().items():
        noise = torch.randn(t.shape, generator=generator)
        if "norm" in name.lower() or ".ln_" in name:
            state[name] = 1.0 + 0.3 * noise if name.endswith("weight") else 0.2 * noise
        else:
            fan_in = t.shape[-1] if t.dim() > 1 else 1
            if name.endswith("c_attn.weight") or ".mlp.c_" in name or "attn.c_proj" in name:
                fan_in = t.shape[0]  # Conv1D stores [in, out]
            state[name] = noise * (1.0 / fan_in ** 0.5 if t.dim() > 1 else 0.1)
    return _from_state(config, state)


def initialised_model(config, seed: int = 0) -> TransformerModel:
    """A model exactly as transformers initialises it: every norm γ = 1 and β = 0, random readers and
    writers. What a user saves before training, and the case a canonical-form shortcut that trusts
    γ = 1, β = 0 gets wrong (issue #53)."""
    torch.manual_seed(seed)
    return _from_state(config, family_of(config).hf_class(config).state_dict())


def _from_state(config, state: dict[str, torch.Tensor]) -> TransformerModel:
    family = family_of(config)
    tensors = family.to_logical(state, config)
    if getattr(config, "tie_word_embeddings", False) and family.task != "sequence-classification":
        # a tied LM head reads the token embedding itself (a classifier's head is its own)
        tensors["head.weight"] = tensors["embed.token"]
    return TransformerModel(family, config, tensors, source="")
