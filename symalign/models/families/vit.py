"""ViT (ViTForImageClassification), transformers 5 names: vit.layers.N.attention.{q,k,v,o}_proj."""

from __future__ import annotations

import torch

from symalign.errors import ModelLoadError
from symalign.models.family import Family, Tensors, varied_configs
from symalign.models.layout import Dims

OUTER = {
    "embed.patch.weight": ("residual:co", None, None, None),
    "embed.patch.bias": ("residual:co",),
    "embed.cls": (None, None, "residual:co"),
    "embed.position": (None, None, "residual:co"),
    "head.weight": (None, "residual:contra"),
    "head.bias": (None,),
}
NAMES = {  # logical suffix -> Hugging Face suffix inside vit.layers.N.
    "ln1": "layernorm_before", "ln2": "layernorm_after",
    "attn.q": "attention.q_proj", "attn.k": "attention.k_proj", "attn.v": "attention.v_proj",
    "mlp.fc": "mlp.fc1", "mlp.proj": "mlp.fc2",
}


def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size,
                config.intermediate_size, config.hidden_act)


def to_logical(sd: Tensors, config) -> Tensors:
    dm = dims(config)
    h, dh, d = dm.n_head, dm.d_head, dm.d_model
    out = {
        "embed.patch.weight": sd["vit.embeddings.patch_embeddings.projection.weight"],
        "embed.patch.bias": sd["vit.embeddings.patch_embeddings.projection.bias"],
        "embed.cls": sd["vit.embeddings.cls_token"],
        "embed.position": sd["vit.embeddings.position_embeddings"],
        "norm.weight": sd["vit.layernorm.weight"],
        "norm.bias": sd["vit.layernorm.bias"],
        "head.weight": sd["classifier.weight"],
        "head.bias": sd["classifier.bias"],
    }
    for i in range(dm.n_layer):
        p, q = f"vit.layers.{i}.", f"layer.{i}."
        for local, hf in NAMES.items():
            out[q + local + ".weight"] = sd[p + hf + ".weight"]
            out[q + local + ".bias"] = sd.get(p + hf + ".bias", torch.zeros(sd[p + hf + ".weight"].shape[0]))
        for n in "qkv":
            out[q + f"attn.{n}.weight"] = out[q + f"attn.{n}.weight"].reshape(h, dh, d)
            out[q + f"attn.{n}.bias"] = out[q + f"attn.{n}.bias"].reshape(h, dh)
        out[q + "attn.o.weight"] = sd[p + "attention.o_proj.weight"].reshape(d, h, dh)
        out[q + "attn.o.bias"] = sd[p + "attention.o_proj.bias"]
    return {k: v.contiguous() for k, v in out.items()}


def from_logical(t: Tensors, config) -> Tensors:
    dm = dims(config)
    d = dm.d_model
    sd = {
        "vit.embeddings.patch_embeddings.projection.weight": t["embed.patch.weight"],
        "vit.embeddings.patch_embeddings.projection.bias": t["embed.patch.bias"],
        "vit.embeddings.cls_token": t["embed.cls"],
        "vit.embeddings.position_embeddings": t["embed.position"],
        "vit.layernorm.weight": t["norm.weight"],
        "vit.layernorm.bias": t["norm.bias"],
        "classifier.weight": t["head.weight"],
        "classifier.bias": t["head.bias"],
    }
    for i in range(dm.n_layer):
        p, q = f"vit.layers.{i}.", f"layer.{i}."
        for local, hf in NAMES.items():
            w = t[q + local + ".weight"]
            sd[p + hf + ".weight"] = w.reshape(-1, d) if local.startswith("attn.") else w
            sd[p + hf + ".bias"] = t[q + local + ".bias"].reshape(-1)
        sd[p + "attention.o_proj.weight"] = t[q + "attn.o.weight"].reshape(d, d)
        sd[p + "attention.o_proj.bias"] = t[q + "attn.o.bias"]
        if not config.qkv_bias:
            for n in "qkv":
                bias = sd.pop(p + f"attention.{n}_proj.bias")
                if bias.abs().max() > 0:
                    raise ModelLoadError("this ViT has no q/k/v biases but the transformed weights need them")
    return sd  # views where the layout allows: writers make them contiguous (export_module), evaluation need not


def canonical_config(config):
    """Folding LayerNorm β into q/k/v creates biases, so the canonical ViT always has them."""
    config = config.__class__.from_dict(config.to_dict())
    config.qkv_bias = True
    return config


def random_inputs(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    shape = (n, config.num_channels, config.image_size, config.image_size)
    return {"pixel_values": torch.randn(shape, generator=generator)}


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, activation: str = "gelu",
                qkv_bias: bool = True, image_size: int = 8, patch: int = 2, channels: int = 1, labels: int = 10,
                **other_families_options):
    from transformers import ViTConfig

    return ViTConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                     intermediate_size=mlp or 4 * width,
                     hidden_act=activation, image_size=image_size, patch_size=patch, num_channels=channels,
                     num_labels=labels, qkv_bias=qkv_bias, architectures=["ViTForImageClassification"])


def test_configs(rng, n: int) -> list:
    """Layers, heads, widths, GELU or ReLU, with or without q/k/v biases."""
    return varied_configs(tiny_config, rng, n, ["gelu", "relu"])


VIT = Family(
    name="vit",
    model_type="vit",
    task="image-classification",
    hf_class_name="ViTForImageClassification",
    outer_tags=OUTER,
    dims=dims,
    to_logical=to_logical,
    from_logical=from_logical,
    canonical_config=canonical_config,
    random_inputs=random_inputs,
    hook_points={"mlp": "vit.layers.{i}.mlp.fc2", "heads": "vit.layers.{i}.attention.o_proj",
                 "q": "vit.layers.{i}.attention.q_proj", "k": "vit.layers.{i}.attention.k_proj"},
    tiny=tiny_config,
    test_configs=test_configs,
)
