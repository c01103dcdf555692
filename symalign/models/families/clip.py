"""CLIP's vision tower as an image classifier (CLIPForImageClassification): a pre-LN ViT under CLIP's names
(self_attn.{q,k,v,out}_proj, layer_norm1/2, mlp.fc1/fc2, quick_gelu), a class embedding without a batch
axis, a patch convolution without bias, and a LayerNorm that writes the residual stream's first value
(`pre_layrnorm`). The head mean-pools the last hidden states of the patch tokens and reads them as they are
(`post_layernorm` normalises only the class token's pooled output, which this head does not use).

What that leaves of the residual's group: the stream starts as γ ⊙ LN(e) + β, whose gains multiply it
coordinate by coordinate with nothing before them to absorb a map, and the head reads the stream with no
norm between, so nothing can be centred: permutations only (norm "stream-layernorm"), and the canonical
form is the model as it is. Inside the blocks everything the ViT admits is admitted: MLP and head
permutations, any class inside heads. TransFusion (Rinaldi et al.) transports task vectors of this tower.

CLIPModel (the two towers with their projections into one embedding space, trained by a contrastive loss)
is refused in one line: its two residual streams and the shared embedding space are not one family's single
stream. The text tower with its projection is a family of its own (clip_text.py)."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.families.vit import random_inputs
from symalign.models.family import Family, varied_configs
from symalign.models.layout import Dims
from symalign.models.weight_map import Row, layer_rows, multi_head_table


def encoder_rows(tower: str) -> list[Row]:
    """The rows of a CLIP tower's encoder layers (the vision and the text tower name them alike)."""
    return list(layer_rows(tower + "encoder.layers.{i}.", multi_head_table(
        {n: f"self_attn.{n}_proj" for n in "qkv"}, "self_attn.out_proj",
        {"ln1": "layer_norm1", "ln2": "layer_norm2", "mlp.fc": "mlp.fc1", "mlp.proj": "mlp.fc2"})).values())


def hook_points(tower: str) -> dict[str, str]:
    """Activation matching's hook points in a CLIP tower."""
    layer = tower + "encoder.layers.{i}."
    return {"mlp": layer + "mlp.fc2", "heads": layer + "self_attn.out_proj", "q": layer + "self_attn.q_proj",
            "k": layer + "self_attn.k_proj"}


OUTER = {
    "embed.patch.weight": ("residual:co", None, None, None),
    "embed.cls": ("residual:co",),
    "embed.position": (None, "residual:co"),
    "embed.norm.weight": ("residual:diag",),
    "embed.norm.bias": ("residual:co",),
    "head.weight": (None, "residual:contra"),
    "head.bias": (None,),
}
V = "vision_model."
# The vision tower up to its final norm; the head (a classifier here, CLIP's projection in clip_vision.py) follows.
TOWER_ROWS = [Row("embed.patch.weight", V + "embeddings.patch_embedding.weight"),
              Row("embed.cls", V + "embeddings.class_embedding"),
              Row("embed.position", V + "embeddings.position_embedding.weight"),
              Row("embed.norm.weight", V + "pre_layrnorm.weight"), Row("embed.norm.bias", V + "pre_layrnorm.bias"),
              Row("norm.weight", V + "post_layernorm.weight"), Row("norm.bias", V + "post_layernorm.bias"),
              *encoder_rows(V)]
ROWS = [*TOWER_ROWS, Row("head.weight", "classifier.weight"), Row("head.bias", "classifier.bias")]


def dims(config) -> Dims:
    v = config.vision_config
    return Dims(v.num_hidden_layers, v.num_attention_heads, v.hidden_size, v.intermediate_size, v.hidden_act,
                norm="stream-layernorm")


def check_config(config) -> None:
    v = config.vision_config
    if v.hidden_size % v.num_attention_heads:
        raise ModelLoadError(f"unsupported clip layout: width {v.hidden_size} is not divisible by its "
                             f"{v.num_attention_heads} heads")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None,
                activation: str = "quick_gelu", image_size: int = 8, patch: int = 2, channels: int = 1,
                labels: int = 10, **other_families_options):
    from transformers import CLIPConfig, CLIPTextConfig, CLIPVisionConfig

    vision = CLIPVisionConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                              intermediate_size=mlp or 4 * width, hidden_act=activation, image_size=image_size,
                              patch_size=patch, num_channels=channels)
    text = CLIPTextConfig(num_hidden_layers=1, hidden_size=8, num_attention_heads=1, intermediate_size=8,
                          vocab_size=16, max_position_embeddings=8, bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config = CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(), num_labels=labels,
                        projection_dim=8)
    config.architectures = ["CLIPForImageClassification"]
    return config


def test_configs(rng, n: int) -> list:
    """Layers, heads, widths, quick GELU or ReLU."""
    return varied_configs(tiny_config, rng, n, ["quick_gelu", "relu"])


CLIP = Family(
    name="clip",
    model_type="clip",
    task="image-classification",
    hf_class_name="CLIPForImageClassification",
    title="CLIP (vision tower)",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: ROWS,
    canonical_config=lambda config: config,
    check_config=check_config,
    random_inputs=random_inputs,
    hook_points=hook_points(V),
    tiny=tiny_config,
    test_configs=test_configs,
)
