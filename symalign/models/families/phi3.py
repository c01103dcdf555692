"""Phi-3 (Phi3ForCausalLM): Llama's block with two fused projections, qkv_proj ([q | k | v] rows, fewer
key/value heads than query heads in the larger models) and gate_up_proj ([gate | up] rows), and RoPE on
a fraction of each head (`partial_rotary_factor`).

Nothing here is new science: the fused tensors are split by the weight map's rows (unequal parts for
q | k | v, equal halves for gate | up) and joined again on export, and the partial rotary is the QK
space's count of rotated dimensions, as for GPT-NeoX."""

from __future__ import annotations

from symalign.models.families.gpt_neox import rotary_dims
from symalign.models.families.llama import BLOCK, FINAL_NORM, NORM_READERS, OUTER, OUTER_ROWS
from symalign.models.families.llama import check_config as llama_check
from symalign.models.families.llama import dims as llama_dims
from symalign.models.family import Family
from symalign.models.layout import Dims, grouped_attention_spaces
from symalign.models.weight_map import layer_rows

QKV = ("h*dh", "kv*dh", "kv*dh")  # qkv_proj's rows: query heads, then key heads, then value heads
ROWS = list(OUTER_ROWS) + list(layer_rows("model.layers.{i}.", {
    "ln1.weight": "input_layernorm.weight",
    "attn.q.weight": ("self_attn.qkv_proj.weight", "(kv g dh) d -> kv g dh d", 0, QKV),
    "attn.k.weight": ("self_attn.qkv_proj.weight", "(kv dh) d -> kv dh d", 1, QKV),
    "attn.v.weight": ("self_attn.qkv_proj.weight", "(kv dh) d -> kv dh d", 2, QKV),
    "attn.o.weight": ("self_attn.o_proj.weight", "d (kv g dh) -> d kv g dh"),
    "ln2.weight": "post_attention_layernorm.weight",
    "mlp.gate.weight": ("mlp.gate_up_proj.weight", "(two m) d -> two m d", 0),
    "mlp.up.weight": ("mlp.gate_up_proj.weight", "(two m) d -> two m d", 1),
    "mlp.proj.weight": "mlp.down_proj.weight",
}).values())


def dims(config) -> Dims:
    return llama_dims(config, rotary_dims=rotary_dims(config))




def check_config(config) -> None:
    llama_check(config)
    if rotary_dims(config) % 2:
        from symalign.errors import ModelLoadError

        raise ModelLoadError(f"unsupported phi3 layout: RoPE rotates {rotary_dims(config)} dimensions per head, an "
                             "odd number (it needs frequency pairs)")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = False,
                vocab: int = 61, context: int = 32, kv_heads: int | None = None, rotary: float = 1.0,
                **other_families_options):
    """`rotary`: the fraction of each head RoPE rotates (partial_rotary_factor)."""
    from transformers import Phi3Config

    return Phi3Config(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                      num_key_value_heads=kv_heads or heads, intermediate_size=mlp or 4 * width, hidden_act="silu",
                      vocab_size=vocab, max_position_embeddings=context, original_max_position_embeddings=context,
                      tie_word_embeddings=tied, pad_token_id=0, bos_token_id=0, eos_token_id=0,
                      rope_parameters={"rope_theta": 10000.0, "rope_type": "default", "partial_rotary_factor": rotary},
                      architectures=["Phi3ForCausalLM"])


def test_configs(rng, n: int) -> list:
    """Grouped queries (unequal fused parts), all or half of each head rotated, tied or untied."""
    out = []
    for _ in range(n):
        heads = rng.choice([2, 4])
        out.append(tiny_config(layers=rng.choice([1, 2]), width=heads * rng.choice([4, 8]), heads=heads,
                               kv_heads=rng.choice([h for h in (1, 2, 4) if h <= heads]), mlp=rng.choice([16, 24]),
                               tied=rng.random() < 0.3, rotary=rng.choice([0.5, 1.0])))
    return out


PHI3 = Family(
    name="phi3",
    model_type="phi3",
    hf_class_name="Phi3ForCausalLM",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: ROWS,
    title="Phi-3",
    check_config=check_config,
    spaces=grouped_attention_spaces,
    hook_points={"mlp": "model.layers.{i}.mlp.down_proj", "heads": "model.layers.{i}.self_attn.o_proj",
                 "qkv": "model.layers.{i}.self_attn.qkv_proj"},
    fused_qkv="blocks",
    block=BLOCK,
    final_norm=FINAL_NORM,
    norm_readers=NORM_READERS,
    tiny=tiny_config,
    test_configs=test_configs,
)
