"""CLIP's text tower with its projection (CLIPTextModelWithProjection; Stable Diffusion XL's second text
encoder): a pre-LN GPT-2-like stack under CLIP's names, a causal mask built in, the final LayerNorm read at
each sequence's first end-of-text token and projected into CLIP's embedding space (`text_projection`, no
bias). Its output is that embedding (`text_embeds`), so the function a transform must keep is the embedding.

What that leaves of the residual's group: unlike the vision tower, nothing writes the stream through a norm
(token and position embeddings are plain writers) and the only reader of the final norm is the projection,
so the canonical form folds every LayerNorm into its readers, as for GPT-2, and the residual admits
orthogonal maps with Q·1 = 1. The projection's output space is CLIP's shared embedding space: a map there
would have to act on the image tower's projection too, so it is left alone here (the pair is CLIPModel's).

A text tower alone has no task loss: weight matching, canonical form, transforms and export need no data,
while barriers, activation and learned matching refuse every data source with that reason
(`symalign.data.base.check_task`)."""

from __future__ import annotations

import torch

from symalign.models.families.clip import encoder_rows, hook_points
from symalign.models.family import Family, token_inputs, varied_configs
from symalign.models.layout import Dims
from symalign.models.weight_map import Row

TASK = "text-embedding"
OUTER = {
    "embed.token": (None, "residual:co"),
    "embed.position": (None, "residual:co"),
    "head.weight": (None, "residual:contra"),
}
T = "text_model."
ROWS = [Row("embed.token", T + "embeddings.token_embedding.weight"),
        Row("embed.position", T + "embeddings.position_embedding.weight"),
        Row("norm.weight", T + "final_layer_norm.weight"), Row("norm.bias", T + "final_layer_norm.bias"),
        Row("head.weight", "text_projection.weight"),
        *encoder_rows(T)]


def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size, config.intermediate_size,
                config.hidden_act)



def random_inputs(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random token ids, each sequence ending in the end-of-text token the tower pools at (the legacy
    eos id 2 pools at the largest id instead: the last token is then made the largest)."""
    ids = token_inputs(config.vocab_size, config.max_position_embeddings, n, generator)["input_ids"]
    ids[:, -1] = config.vocab_size - 1 if config.eos_token_id == 2 else config.eos_token_id
    return {"input_ids": ids}


# The projection's size is CLIP's embedding space, not the tower's width: it stays when a tower is widened.
def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None,
                activation: str = "quick_gelu", vocab: int = 61, context: int = 32, projection: int = 16,
                **other_families_options):
    from transformers import CLIPTextConfig

    config = CLIPTextConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                            intermediate_size=mlp or 4 * width, hidden_act=activation, vocab_size=vocab,
                            max_position_embeddings=context, projection_dim=projection,
                            bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config.architectures = ["CLIPTextModelWithProjection"]
    return config


def test_configs(rng, n: int) -> list:
    """Layers, heads, widths, MLP sizes, quick GELU, GELU or ReLU."""
    return varied_configs(tiny_config, rng, n, ["quick_gelu", "gelu", "relu"])


CLIP_TEXT = Family(
    name="clip_text",
    model_type="clip_text_model",
    task=TASK,
    hf_class_name="CLIPTextModelWithProjection",
    title="CLIP (text tower)",
    output="text_embeds",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: ROWS,
    canonical_config=lambda config: config,
    random_inputs=random_inputs,
    hook_points=hook_points(T),
    tiny=tiny_config,
    test_configs=test_configs,
)
