"""OLMoE (OlmoeForCausalLM): Mixtral's mixture of experts (router `mlp.gate`, fused experts) with Llama's
grouped-query attention, plus an RMSNorm with learned gains over the whole of q and of k (`q_norm` over
all query heads at once, `k_norm` over all key/value heads), applied before RoPE.

What a norm across heads leaves: it divides q by its norm over every head together and multiplies
coordinate j of the whole vector by its own gain. A permutation of heads (and of the query heads inside
a group) moves the gains with their coordinates and keeps that norm, so heads still permute; the gains
are tagged by the heads (and query heads) they belong to. A map inside one head changes what meets which
gain, and even a scalar on one head changes the norm every other head is divided by: QK admits nothing
(every class refused with the reason). VO (no norm on v) keeps its maps; the experts, their units and the
residual are Mixtral's. `clip_qkv` (clamping q, k and v coordinate by coordinate) is refused in one line:
it would take maps inside heads that are not permutations out of the function."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.families.llama import OUTER_ROWS
from symalign.models.families.llama import ROWS as LLAMA_ROWS
from symalign.models.families.llama import check_config as llama_check
from symalign.models.families.llama import dims as llama_dims
from symalign.models.families.mixtral import BLOCK as MIXTRAL_BLOCK
from symalign.models.families.mixtral import EXPERT_ROWS, NORM_READERS, moe_family, moe_test_configs
from symalign.models.layout import Dims
from symalign.models.weight_map import layer_rows

# q_norm [kv, g, dh]: one gain per coordinate of every query head; k_norm [kv, dh]
QK_NORMS = {"attn.q_norm.weight": ("heads:co", "qheads:co", None), "attn.k_norm.weight": ("heads:co", None)}
BLOCK = MIXTRAL_BLOCK | QK_NORMS
NORM_ROWS = layer_rows("model.layers.{i}.", {
    "attn.q_norm.weight": ("self_attn.q_norm.weight", "(kv g dh) -> kv g dh"),
    "attn.k_norm.weight": ("self_attn.k_norm.weight", "(kv dh) -> kv dh"),
})
LAYER_ROWS = [(LLAMA_ROWS | EXPERT_ROWS | NORM_ROWS)[name] for name in BLOCK]


def dims(config) -> Dims:
    return llama_dims(config, n_experts=config.num_experts, qk_norm=True)


def check_config(config) -> None:
    llama_check(config, experts=True)
    if getattr(config, "clip_qkv", None) is not None:
        raise ModelLoadError(f"unsupported olmoe layout: clip_qkv={config.clip_qkv} (q, k and v clamped coordinate "
                             "by coordinate: a map inside a head would change what is clamped)")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = False,
                vocab: int = 61, context: int = 32, kv_heads: int | None = None, experts: int = 4, top_k: int = 2,
                **other_families_options):
    """`experts` per layer, each token routed to `top_k` of them."""
    from transformers import OlmoeConfig

    return OlmoeConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                       num_key_value_heads=kv_heads or heads, intermediate_size=mlp or 2 * width, hidden_act="silu",
                       vocab_size=vocab, max_position_embeddings=context, tie_word_embeddings=tied,
                       num_experts=experts, num_experts_per_tok=top_k, bos_token_id=0, eos_token_id=0,
                       pad_token_id=0, architectures=["OlmoeForCausalLM"])


OLMOE = moe_family(
    name="olmoe",
    model_type="olmoe",
    hf_class_name="OlmoeForCausalLM",
    dims=dims,
    weight_map=lambda config: OUTER_ROWS + LAYER_ROWS,
    title="OLMoE",
    check_config=check_config,
    block=BLOCK,
    norm_readers=NORM_READERS,
    tiny=tiny_config,
    test_configs=moe_test_configs(tiny_config),
)
