"""GPT-NeoX (GPTNeoXForCausalLM: Pythia): LayerNorm, GELU MLP, attention and MLP side by side
(parallel residual: both read the same stream through their own LayerNorm) or in turn, a fused
query_key_value laid out per head, and RoPE on only the first rotary_pct of each head.

All of it is declarative: the parallel residual changes no tag (both LayerNorms read the residual),
the per-head fused QKV is split by symalign.models.fused, and the partial rotary is the QK space's
count of rotated dimensions, so its rotary class is block-diagonal (frequency pairs, then an
orthogonal map on the dimensions RoPE leaves alone) and general QK maps are refused."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.family import Family
from symalign.models.layout import BLOCK, Dims
from symalign.models.weight_map import Row, layer_rows

OUTER = {
    "embed.token": (None, "residual:co"),
    "head.weight": (None, "residual:contra"),
}
ATTENTION_BIASES = ("attn.q.bias", "attn.k.bias", "attn.v.bias", "attn.o.bias")
# logical name in a layer -> Hugging Face name in gpt_neox.layers.{i} (no reshape needed)
PLAIN = {"ln1.weight": "input_layernorm.weight", "ln1.bias": "input_layernorm.bias",
         "ln2.weight": "post_attention_layernorm.weight", "ln2.bias": "post_attention_layernorm.bias",
         "mlp.fc.weight": "mlp.dense_h_to_4h.weight", "mlp.fc.bias": "mlp.dense_h_to_4h.bias",
         "mlp.proj.weight": "mlp.dense_4h_to_h.weight", "mlp.proj.bias": "mlp.dense_4h_to_h.bias"}


def rotary_dims(config) -> int:
    """Dimensions of each head RoPE rotates: head size × partial_rotary_factor (Pythia: a quarter)."""
    factor = (getattr(config, "rope_parameters", None) or {}).get("partial_rotary_factor", 1.0)
    return int(config.hidden_size // config.num_attention_heads * factor)


def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size, config.intermediate_size,
                config.hidden_act, rotary_dims=rotary_dims(config))


def block(config) -> dict[str, tuple[str | None, ...]]:
    if getattr(config, "attention_bias", True):
        return BLOCK
    return {k: v for k, v in BLOCK.items() if k not in ATTENTION_BIASES}


# The weight map (symalign.models.weight_map): query_key_value holds each head's q, k, v in turn.
ROWS = [Row("embed.token", "gpt_neox.embed_in.weight"), Row("norm.weight", "gpt_neox.final_layer_norm.weight"),
        Row("norm.bias", "gpt_neox.final_layer_norm.bias"),
        Row("head.weight", "lm_head.weight", fallback="gpt_neox.embed_in.weight"),
        *layer_rows("gpt_neox.layers.{i}.", {
            **{f"attn.{n}.weight": ("attention.query_key_value.weight", "(h three dh) d -> three h dh d", j)
               for j, n in enumerate("qkv")},
            **{f"attn.{n}.bias": ("attention.query_key_value.bias", "(h three dh) -> three h dh", j)
               for j, n in enumerate("qkv")},
            "attn.o.weight": ("attention.dense.weight", "d (h dh) -> d h dh"),
            "attn.o.bias": "attention.dense.bias",
            **PLAIN,
        }).values()]


def rows(config) -> list[Row]:
    """The weight map of this config (attention biases only where it has them)."""
    biased = getattr(config, "attention_bias", True)
    return [r for r in ROWS if biased or r.logical not in ATTENTION_BIASES]




def check_config(config) -> None:
    """Refuse, in one line each, the GPT-NeoX layouts whose symmetries this spec does not describe."""
    heads = config.num_attention_heads
    if config.hidden_size % heads:
        raise ModelLoadError(f"unsupported GPT-NeoX layout: width {config.hidden_size} is not divisible by its "
                             f"{heads} heads")
    if rotary_dims(config) % 2:
        raise ModelLoadError(f"unsupported GPT-NeoX layout: RoPE rotates {rotary_dims(config)} dimensions per head, an "
                             "odd number (it needs frequency pairs)")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, activation: str = "gelu",
                tied: bool = False, vocab: int = 61, context: int = 32, rotary: float = 0.25, parallel: bool = True,
                qkv_bias: bool = True, **other_families_options):
    """`rotary`: the fraction of each head RoPE rotates (Pythia: 0.25); `parallel`: parallel residual."""
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                         intermediate_size=mlp or 4 * width, hidden_act=activation, vocab_size=vocab,
                         max_position_embeddings=context, tie_word_embeddings=tied, use_parallel_residual=parallel,
                         attention_bias=qkv_bias, rotary_pct=rotary, rotary_emb_base=10000, bos_token_id=0,
                         eos_token_id=0, architectures=["GPTNeoXForCausalLM"])


def test_configs(rng, n: int) -> list:
    """Parallel and sequential residual, rotary fractions (a quarter, a half, all), with and without
    attention biases, tied or untied head, GELU or ReLU."""
    out = []
    for _ in range(n):
        heads = rng.choice([1, 2, 4])
        out.append(tiny_config(layers=rng.choice([1, 2, 3]), width=heads * rng.choice([8, 16]), heads=heads,
                               mlp=rng.choice([16, 24, 48]), activation=rng.choice(["gelu", "relu"]),
                               tied=rng.random() < 0.3, rotary=rng.choice([0.25, 0.5, 1.0]),
                               parallel=rng.random() < 0.6, qkv_bias=rng.random() < 0.7))
    return out


GPT_NEOX = Family(
    name="gpt_neox",
    model_type="gpt_neox",
    hf_class_name="GPTNeoXForCausalLM",
    outer_tags=OUTER,
    dims=dims,
    weight_map=rows,
    title="GPT-NeoX",
    check_config=check_config,
    hook_points={"mlp": "gpt_neox.layers.{i}.mlp.dense_4h_to_h", "heads": "gpt_neox.layers.{i}.attention.dense",
                 "qkv": "gpt_neox.layers.{i}.attention.query_key_value"},
    fused_qkv="per-head",
    block=block,
    tiny=tiny_config,
    test_configs=test_configs,
)
