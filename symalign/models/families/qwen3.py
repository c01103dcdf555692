"""Qwen3 (Qwen3ForCausalLM): Llama's block plus an RMSNorm with learned gains over each head's q and k
(q_norm, k_norm, applied before RoPE), and a head size of its own (config.head_dim: Qwen3-0.6B has
16 heads of 128 at width 1024).

What the per-head norm leaves of the maps inside a head: RMSNorm divides q by its norm over the head's
dimensions and multiplies coordinate j by the gain w_j, shared by every head. An orthogonal map keeps
the norm but sends coordinate j's value to where another gain meets it, and RoPE needs the frequency
pairs kept besides; so no rotation, permutation or invertible map survives in general. A positive
scalar per head nearly does: the norm divides it out, up to its ε (q/√(mean q² + ε)), which a tiny
model's check sees at 1e-4; so QK admits nothing exactly and every class is refused with that reason.
The norm's gains carry no space (every head shares them), so heads and the query heads inside a group
still permute, and VO (no norm on v) keeps its orthogonal and invertible maps. The residual stream is
Llama's: RMSNorm, orthogonal maps once its gains are absorbed."""

from __future__ import annotations

from symalign.models.families.llama import (
    BIASES,
    BLOCK,
    FINAL_NORM,
    HOOK_POINTS,
    NORM_READERS,
    OUTER,
    OUTER_ROWS,
    ROWS,
    head_size,
)
from symalign.models.families.llama import check_config as llama_check
from symalign.models.families.llama import dims as llama_dims
from symalign.models.family import Family
from symalign.models.layout import Dims, grouped_attention_spaces
from symalign.models.weight_map import Row, layer_rows

QK_NORMS = {"attn.q_norm.weight": (None,), "attn.k_norm.weight": (None,)}  # [head size], shared by every head
NORM_ROWS = layer_rows("model.layers.{i}.", {"attn.q_norm.weight": "self_attn.q_norm.weight",
                                              "attn.k_norm.weight": "self_attn.k_norm.weight"})
ATTENTION_BIASES = ("attn.q.bias", "attn.k.bias", "attn.v.bias", "attn.o.bias")


def block(config) -> dict[str, tuple[str | None, ...]]:
    biases = {name: BIASES[name] for name in ATTENTION_BIASES} if getattr(config, "attention_bias", False) else {}
    return BLOCK | QK_NORMS | biases


def dims(config) -> Dims:
    size = head_size(config)
    return llama_dims(config, rotary_dims=size, qk_norm=True, head_size=size)


def rows(config) -> list[Row]:
    table = ROWS | NORM_ROWS
    return OUTER_ROWS + [table[name] for name in block(config)]




def check_config(config) -> None:
    llama_check(config, own_head_dim=True)


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = True,
                vocab: int = 61, context: int = 32, kv_heads: int | None = None, head_dim: int | None = None,
                attention_bias: bool = False, **other_families_options):
    """`head_dim`: a head size other than width / heads (Qwen3's own)."""
    from transformers import Qwen3Config

    return Qwen3Config(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                       num_key_value_heads=kv_heads or heads, head_dim=head_dim or width // heads,
                       intermediate_size=mlp or 4 * width, hidden_act="silu", vocab_size=vocab,
                       max_position_embeddings=context, tie_word_embeddings=tied, attention_bias=attention_bias,
                       bos_token_id=0, eos_token_id=0, architectures=["Qwen3ForCausalLM"])


def test_configs(rng, n: int) -> list:
    """Grouped queries, head sizes equal to width / heads or not (even: RoPE), q/k/v/o biases or none, ties."""
    out = []
    for _ in range(n):
        heads = rng.choice([2, 4])
        width = heads * rng.choice([4, 8])
        out.append(tiny_config(layers=rng.choice([1, 2]), width=width, heads=heads,
                               kv_heads=rng.choice([h for h in (1, 2, 4) if h <= heads]),
                               head_dim=rng.choice([width // heads, 6, 12]), mlp=rng.choice([16, 24]),
                               tied=rng.random() < 0.5, attention_bias=rng.random() < 0.3))
    return out


QWEN3 = Family(
    name="qwen3",
    model_type="qwen3",
    hf_class_name="Qwen3ForCausalLM",
    outer_tags=OUTER,
    dims=dims,
    weight_map=rows,
    title="Qwen3",
    check_config=check_config,
    spaces=grouped_attention_spaces,
    hook_points=HOOK_POINTS,
    block=block,
    final_norm=FINAL_NORM,
    norm_readers=NORM_READERS,
    tiny=tiny_config,
    test_configs=test_configs,
)
