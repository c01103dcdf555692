"""CLIP's vision tower with its projection (CLIPVisionModelWithProjection; one half of a CLIPModel): the
tower of clip.py, with the class token's final norm read by `visual_projection` (no bias) into CLIP's
embedding space instead of a classifier over mean-pooled patches. Its output is that embedding
(`image_embeds`).

What that leaves of the residual's group: `pre_layrnorm` still writes the stream's first value through its
own gains, with nothing before them to absorb a map, so the residual admits permutations only, as in
clip.py, and the canonical form is the model as it is. The projection's output space is the embedding space
CLIPModel shares with the text tower: a map there belongs to the pair (symalign.match.towers).

Like the text tower, it has no task loss of its own: weight matching, transforms and export need no data,
and every data source refuses it in one line."""

from __future__ import annotations

from symalign.models.families.clip import OUTER as CLASSIFIER_OUTER
from symalign.models.families.clip import TOWER_ROWS, V, hook_points
from symalign.models.families.clip import tiny_config as tiny_classifier_config
from symalign.models.families.vit import random_inputs
from symalign.models.family import Family, varied_configs
from symalign.models.layout import Dims
from symalign.models.weight_map import Row

TASK = "image-embedding"
OUTER = {k: v for k, v in CLASSIFIER_OUTER.items() if k != "head.bias"}
ROWS = [*TOWER_ROWS, Row("head.weight", "visual_projection.weight")]



def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size, config.intermediate_size,
                config.hidden_act, norm="stream-layernorm")


def tiny_config(*, projection: int = 16, **options):
    """clip.py's small vision tower, with a projection whose size stays when the tower widens."""
    from transformers import CLIPVisionConfig

    vision = tiny_classifier_config(**options).vision_config.to_dict()
    config = CLIPVisionConfig(**{**vision, "projection_dim": projection})
    config.architectures = ["CLIPVisionModelWithProjection"]
    return config


def test_configs(rng, n: int) -> list:
    """Layers, heads, widths, MLP sizes, quick GELU or ReLU."""
    return varied_configs(tiny_config, rng, n, ["quick_gelu", "relu"])


CLIP_VISION = Family(
    name="clip_vision",
    model_type="clip_vision_model",
    task=TASK,
    hf_class_name="CLIPVisionModelWithProjection",
    title="CLIP (vision tower and projection)",
    output="image_embeds",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: ROWS,
    canonical_config=lambda config: config,
    random_inputs=random_inputs,
    hook_points=hook_points(V),
    tiny=tiny_config,
    test_configs=test_configs,
)
