"""The Python a family data file names where its algebra or its inputs are not data: random inputs of
encoders, images and text towers, ViT's optional q/k/v biases, CLIP's nested small configs, and a language
model's config turned into a classifier's. Each is named from a file as "symalign.models.family_hooks:NAME"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from symalign.data.preprocess import image_config
from symalign.errors import ModelLoadError
from symalign.models.family import Family, Tensors, token_inputs


def token_and_type_inputs(config: Any, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """BERT's: token ids and token types (RoBERTa's positions start after its padding index)."""
    length = min(config.max_position_embeddings - 2, 16)
    ids = torch.randint(0, config.vocab_size, (n, length), generator=generator)
    types = torch.randint(0, config.type_vocab_size, (n, length), generator=generator)
    return {"input_ids": ids, "token_type_ids": types}


def token_inputs_at_context(config: Any, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """DistilBERT's: token ids only, as long as its positions allow (at most 16)."""
    length = min(config.max_position_embeddings, 16)
    return {"input_ids": torch.randint(0, config.vocab_size, (n, length), generator=generator)}


def image_inputs(config: Any, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random images of the size the config reads (a vision tower's own config where it has one: CLIP)."""
    sized = image_config(config)
    shape = (n, sized.num_channels, sized.image_size, sized.image_size)
    return {"pixel_values": torch.randn(shape, generator=generator)}


def end_of_text_inputs(config: Any, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """CLIP's text tower: random token ids, each sequence ending in the end-of-text token it pools at (the legacy
    eos id 2 pools at the largest id instead: the last token is then made the largest)."""
    ids = token_inputs(config.vocab_size, config.max_position_embeddings, n, generator)["input_ids"]
    ids[:, -1] = config.vocab_size - 1 if config.eos_token_id == 2 else config.eos_token_id
    return {"input_ids": ids}


QKV_BIASES = [f"attention.{n}_proj.bias" for n in "qkv"]  # absent from a ViT when config.qkv_bias is False


def with_qkv_biases(config: Any) -> Any:
    """Folding LayerNorm β into q/k/v creates biases, so the canonical ViT always has them."""
    config = config.__class__.from_dict(config.to_dict())
    config.qkv_bias = True
    return config


def optional_qkv_biases(family: Family) -> Family:
    """ViT's adapters: zero q/k/v biases read where the config has none, and a refusal to write biases that
    are not zero to a config without them."""
    read, write = family.to_logical, family.from_logical

    def layers(config: Any) -> list[str]:
        return [f"vit.layers.{i}.{name}" for i in range(config.num_hidden_layers) for name in QKV_BIASES]

    def to_logical(sd: Tensors, config: Any) -> Tensors:
        zeros = {name: torch.zeros(config.hidden_size) for name in layers(config) if name not in sd}
        return read({**sd, **zeros}, config)

    def from_logical(t: Tensors, config: Any) -> Tensors:
        sd = write(t, config)
        if not config.qkv_bias:
            for name in layers(config):
                if sd.pop(name).abs().max() > 0:
                    raise ModelLoadError("this ViT has no q/k/v biases but the transformed weights need them")
        return sd

    return replace(family, to_logical=to_logical, from_logical=from_logical)


def _clip_vision(layers: int, width: int, heads: int, mlp: int, activation: str, image_size: int, patch: int,
                 channels: int, **projection):
    from transformers import CLIPVisionConfig

    return CLIPVisionConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                            intermediate_size=mlp or 4 * width, hidden_act=activation, image_size=image_size,
                            patch_size=patch, num_channels=channels, **projection)


def clip_classifier_config(*, hf_class_name: str, layers: int = 2, width: int = 32, heads: int = 4, mlp: int = 0,
                           activation: str = "quick_gelu", image_size: int = 8, patch: int = 2, channels: int = 1,
                           labels: int = 10, **other_families_options):
    """A small CLIPConfig whose vision tower is the model (a one-layer text tower beside it, unused)."""
    from transformers import CLIPConfig, CLIPTextConfig

    vision = _clip_vision(layers, width, heads, mlp, activation, image_size, patch, channels)
    text = CLIPTextConfig(num_hidden_layers=1, hidden_size=8, num_attention_heads=1, intermediate_size=8,
                          vocab_size=16, max_position_embeddings=8, bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config = CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(), num_labels=labels,
                        projection_dim=8)
    config.architectures = [hf_class_name]
    return config


def clip_vision_config(*, hf_class_name: str, layers: int = 2, width: int = 32, heads: int = 4, mlp: int = 0,
                       activation: str = "quick_gelu", image_size: int = 8, patch: int = 2, channels: int = 1,
                       projection: int = 16, **other_families_options):
    """The small vision tower with a projection whose size stays when the tower widens."""
    config = _clip_vision(layers, width, heads, mlp, activation, image_size, patch, channels,
                          projection_dim=projection)
    config.architectures = [hf_class_name]
    return config


def clip_text_config(*, hf_class_name: str, layers: int = 2, width: int = 32, heads: int = 4, mlp: int = 0,
                     activation: str = "quick_gelu", vocab: int = 61, context: int = 32, projection: int = 16,
                     **other_families_options):
    """The small text tower with a projection whose size stays when the tower widens."""
    from transformers import CLIPTextConfig

    config = CLIPTextConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                            intermediate_size=mlp or 4 * width, hidden_act=activation, vocab_size=vocab,
                            max_position_embeddings=context, projection_dim=projection,
                            bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config.architectures = [hf_class_name]
    return config


def as_classifier(config: Any, hf_class_name: str, labels: int, names: tuple[str, ...] | None = None) -> Any:
    """`config` (changed in place) as a classifier of `labels` classes, named by `names` when given: a fine-tune
    that puts a new head on a language model (symalign.train.loop)."""
    config.architectures = [hf_class_name]
    config.num_labels = labels
    config.tie_word_embeddings = False  # nothing to tie: the head maps to labels, not tokens
    if names:
        config.id2label = dict(enumerate(names))
        config.label2id = {name: i for i, name in enumerate(names)}
    if getattr(config, "pad_token_id", None) is None:  # decoders find the last token by it
        config.pad_token_id = 0
    return config
