"""OPT (OPTForCausalLM): GPT-2's pre-LN block with separate q, k, v projections, a ReLU MLP, learned
positions stored with an offset of 2 rows (OPTLearnedPositionalEmbedding adds it when it reads them;
the rows are one tensor of the residual like GPT-2's), and, where the embeddings are narrower than the
residual (`word_embed_proj_dim`), a project_in after the token embedding and a project_out before the
head. Then the token embedding and head carry no residual axis: project_in writes the residual, and
project_out reads the final LayerNorm, so the canonical form folds that norm into it.

Refused in one line: post-LN OPT (`do_layer_norm_before=False`: OPT-350m), layers without biases or
without LayerNorm gains (`enable_bias=False`, `layer_norm_elementwise_affine=False`)."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.family import Family
from symalign.models.layout import Dims
from symalign.models.weight_map import Row, layer_rows

PREFIX = "model.decoder."
LAYER_ROWS = list(layer_rows(PREFIX + "layers.{i}.", {
    "ln1.weight": "self_attn_layer_norm.weight", "ln1.bias": "self_attn_layer_norm.bias",
    **{f"attn.{n}.weight": (f"self_attn.{n}_proj.weight", "(h dh) d -> h dh d") for n in "qkv"},
    **{f"attn.{n}.bias": (f"self_attn.{n}_proj.bias", "(h dh) -> h dh") for n in "qkv"},
    "attn.o.weight": ("self_attn.out_proj.weight", "d (h dh) -> d h dh"),
    "attn.o.bias": "self_attn.out_proj.bias",
    "ln2.weight": "final_layer_norm.weight", "ln2.bias": "final_layer_norm.bias",
    "mlp.fc.weight": "fc1.weight", "mlp.fc.bias": "fc1.bias",
    "mlp.proj.weight": "fc2.weight", "mlp.proj.bias": "fc2.bias",
}).values())
OUTER_ROWS = [Row("embed.token", PREFIX + "embed_tokens.weight"),
              Row("embed.position", PREFIX + "embed_positions.weight"),
              Row("norm.weight", PREFIX + "final_layer_norm.weight"),
              Row("norm.bias", PREFIX + "final_layer_norm.bias"),
              Row("head.weight", "lm_head.weight", fallback=PREFIX + "embed_tokens.weight")]
PROJECTIONS = [Row("embed.project.weight", PREFIX + "project_in.weight"),
               Row("head.project.weight", PREFIX + "project_out.weight")]


def projected(config) -> bool:
    """Whether embeddings are narrower (or wider) than the residual: project_in and project_out exist."""
    return config.word_embed_proj_dim != config.hidden_size


def outer_tags(config) -> dict[str, tuple[str | None, ...]]:
    if projected(config):
        return {"embed.token": (None, None), "embed.project.weight": ("residual:co", None),
                "embed.position": (None, "residual:co"), "head.project.weight": (None, "residual:contra"),
                "head.weight": (None, None)}
    return {"embed.token": (None, "residual:co"), "embed.position": (None, "residual:co"),
            "head.weight": (None, "residual:contra")}


def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size, config.ffn_dim,
                config.activation_function)


def rows(config) -> list[Row]:
    return OUTER_ROWS + LAYER_ROWS + (PROJECTIONS if projected(config) else [])




def check_config(config) -> None:
    def refuse(what: str) -> None:
        raise ModelLoadError(f"unsupported opt layout: {what}")

    if not config.do_layer_norm_before:
        refuse("post-LN (do_layer_norm_before=False, as in OPT-350m): its LayerNorms sit on the residual stream "
               "after a projection symalign reads as pre-LN")
    if getattr(config, "_remove_final_layer_norm", False):
        refuse("no final LayerNorm (_remove_final_layer_norm=True)")
    if not getattr(config, "enable_bias", True) or not getattr(config, "layer_norm_elementwise_affine", True):
        refuse("layers without biases or LayerNorm gains (enable_bias / layer_norm_elementwise_affine False)")
    if config.hidden_size % config.num_attention_heads:
        refuse(f"width {config.hidden_size} is not divisible by its {config.num_attention_heads} heads")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, activation: str = "relu",
                tied: bool = True, vocab: int = 61, context: int = 32, embed_dim: int | None = None,
                **other_families_options):
    """`embed_dim`: word_embed_proj_dim (narrower embeddings with project_in/out; default: the width)."""
    from transformers import OPTConfig

    return OPTConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads, ffn_dim=mlp or 4 * width,
                     activation_function=activation, vocab_size=vocab, max_position_embeddings=context,
                     word_embed_proj_dim=embed_dim or width, tie_word_embeddings=tied, dropout=0.0,
                     attention_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=0,
                     architectures=["OPTForCausalLM"])


def test_configs(rng, n: int) -> list:
    """ReLU or GELU, tied or untied, with and without project_in/out."""
    out = []
    for _ in range(n):
        heads = rng.choice([1, 2, 4])
        width = heads * rng.choice([4, 8])
        out.append(tiny_config(layers=rng.choice([1, 2]), width=width, heads=heads, mlp=rng.choice([16, 24]),
                               activation=rng.choice(["relu", "gelu"]), tied=rng.random() < 0.5,
                               embed_dim=rng.choice([None, max(2, width // 2)])))
    return out


OPT = Family(
    name="opt",
    model_type="opt",
    hf_class_name="OPTForCausalLM",
    outer_tags=outer_tags,
    dims=dims,
    weight_map=rows,
    title="OPT",
    check_config=check_config,
    hook_points={"mlp": "model.decoder.layers.{i}.fc2", "heads": "model.decoder.layers.{i}.self_attn.out_proj",
                 "q": "model.decoder.layers.{i}.self_attn.q_proj", "k": "model.decoder.layers.{i}.self_attn.k_proj"},
    final_norm_readers=lambda config: ("head.project",) if projected(config) else ("head",),
    tiny=tiny_config,
    test_configs=test_configs,
)
