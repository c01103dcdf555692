"""ViT (ViTForImageClassification), transformers 5 names: vit.layers.N.attention.{q,k,v,o}_proj."""

from __future__ import annotations

import torch

from symalign.data.preprocess import image_config
from symalign.errors import ModelLoadError
from symalign.models.family import Family, Tensors, varied_configs
from symalign.models.layout import Dims
from symalign.models.weight_map import Row, adapters, layer_rows, multi_head_table

OUTER = {
    "embed.patch.weight": ("residual:co", None, None, None),
    "embed.patch.bias": ("residual:co",),
    "embed.cls": (None, None, "residual:co"),
    "embed.position": (None, None, "residual:co"),
    "head.weight": (None, "residual:contra"),
    "head.bias": (None,),
}
QKV_BIASES = [f"attention.{n}_proj.bias" for n in "qkv"]  # absent when config.qkv_bias is False
ROWS = [Row("embed.patch.weight", "vit.embeddings.patch_embeddings.projection.weight"),
        Row("embed.patch.bias", "vit.embeddings.patch_embeddings.projection.bias"),
        Row("embed.cls", "vit.embeddings.cls_token"), Row("embed.position", "vit.embeddings.position_embeddings"),
        Row("norm.weight", "vit.layernorm.weight"), Row("norm.bias", "vit.layernorm.bias"),
        Row("head.weight", "classifier.weight"), Row("head.bias", "classifier.bias"),
        *layer_rows("vit.layers.{i}.", multi_head_table(
            {n: f"attention.{n}_proj" for n in "qkv"}, "attention.o_proj",
            {"ln1": "layernorm_before", "ln2": "layernorm_after", "mlp.fc": "mlp.fc1",
             "mlp.proj": "mlp.fc2"})).values()]


def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size,
                config.intermediate_size, config.hidden_act)


def to_logical(sd: Tensors, config) -> Tensors:
    """The weight map's read, with zero q/k/v biases where the config has none (the logical layout always
    has them: the canonical form folds LayerNorm β into them)."""
    dm = dims(config)
    zeros = {f"vit.layers.{i}.{name}": torch.zeros(dm.d_model) for i in range(dm.n_layer) for name in QKV_BIASES
             if f"vit.layers.{i}.{name}" not in sd}
    return read({**sd, **zeros}, config)


def from_logical(t: Tensors, config) -> Tensors:
    sd = write(t, config)
    if not config.qkv_bias:
        for name in [f"vit.layers.{i}.{b}" for i in range(config.num_hidden_layers) for b in QKV_BIASES]:
            if sd.pop(name).abs().max() > 0:
                raise ModelLoadError("this ViT has no q/k/v biases but the transformed weights need them")
    return sd


read, write = adapters(lambda config: ROWS, dims)


def canonical_config(config):
    """Folding LayerNorm β into q/k/v creates biases, so the canonical ViT always has them."""
    config = config.__class__.from_dict(config.to_dict())
    config.qkv_bias = True
    return config


def random_inputs(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random images of the size the config reads (a vision tower's own config where it has one: CLIP)."""
    sized = image_config(config)
    shape = (n, sized.num_channels, sized.image_size, sized.image_size)
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
    weight_map=lambda config: ROWS,
    canonical_config=canonical_config,
    random_inputs=random_inputs,
    hook_points={"mlp": "vit.layers.{i}.mlp.fc2", "heads": "vit.layers.{i}.attention.o_proj",
                 "q": "vit.layers.{i}.attention.q_proj", "k": "vit.layers.{i}.attention.k_proj"},
    tiny=tiny_config,
    test_configs=test_configs,
)
