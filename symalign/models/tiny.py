"""Tiny randomly initialised GPT-2 / ViT / Llama (Qwen2) / BERT models: for the demo, the docs and the tests.

Every parameter is random (LayerNorm gains and all biases included), so symmetry and
canonical-form checks cannot pass by accident on an all-ones gain or an all-zero bias."""

from __future__ import annotations

import torch

from symalign.models.family import TransformerModel
from symalign.models.io import FAMILIES, _quiet_transformers


def tiny_config(family: str, *, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None,
                activation: str = "gelu", tied: bool = True, qkv_bias: bool = True, vocab: int = 61,
                image_size: int = 8, patch: int = 2, channels: int = 1, labels: int = 10, context: int = 32,
                kv_heads: int | None = None, attention_bias: bool = False, mlp_bias: bool = False):
    """A Hugging Face config for a small model of the family (`attention_bias`, `mlp_bias`: Llama only;
    Qwen2 is a Llama with q/k/v biases)."""
    _quiet_transformers()
    from transformers import BertConfig, GPT2Config, LlamaConfig, Qwen2Config, RobertaConfig, ViTConfig

    mlp = mlp or 4 * width
    if family == "gpt2":
        return GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_inner=mlp, activation_function=activation,
                          vocab_size=vocab, n_positions=context, tie_word_embeddings=tied, bos_token_id=0,
                          eos_token_id=0, architectures=["GPT2LMHeadModel"])
    if family == "vit":
        return ViTConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads, intermediate_size=mlp,
                         hidden_act=activation, image_size=image_size, patch_size=patch, num_channels=channels,
                         num_labels=labels, qkv_bias=qkv_bias, architectures=["ViTForImageClassification"])
    if family in ("bert", "roberta"):
        cls = BertConfig if family == "bert" else RobertaConfig
        return cls(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads, intermediate_size=mlp,
                   hidden_act=activation, vocab_size=vocab, max_position_embeddings=context + 2,
                   tie_word_embeddings=tied, pad_token_id=0, architectures=[f"{cls.__name__[:-6]}ForMaskedLM"])
    if family in ("llama", "qwen2"):
        shared = dict(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                      num_key_value_heads=kv_heads or heads, intermediate_size=mlp, hidden_act="silu",
                      vocab_size=vocab, max_position_embeddings=context, tie_word_embeddings=tied, bos_token_id=0,
                      eos_token_id=0, rope_theta=10000.0)
        if family == "qwen2":
            return Qwen2Config(**shared, architectures=["Qwen2ForCausalLM"])
        return LlamaConfig(**shared, attention_bias=attention_bias, mlp_bias=mlp_bias,
                           architectures=["LlamaForCausalLM"])
    raise ValueError(f"unknown family {family!r}")


def random_model(config, seed: int = 0) -> TransformerModel:
    """A model with every parameter drawn at random (fan-in scaled), LayerNorms perturbed."""
    family = FAMILIES[config.model_type]
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    module = family.hf_class(config)
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
    tensors = family.to_logical(state, config)
    if getattr(config, "tie_word_embeddings", False):  # a tied head reads the token embedding itself
        tensors["head.weight"] = tensors["embed.token"]
    return TransformerModel(family, config, tensors, source="")
