"""Qwen2-MoE (Qwen2MoeForCausalLM): Qwen2's attention (q, k, v biases) with a mixture of routed experts,
as Mixtral's, and one shared expert beside them that every token passes: a SwiGLU MLP of its own size
(`shared_expert_intermediate_size`) whose output is scaled by sigmoid(w·x) (`shared_expert_gate`, one row
reading the residual) and added to the routed experts' sum.

What the shared expert adds to the group: its units permute on their own (a `shared` space of kind mlp,
apart from every routed expert's units; it follows the MLP's class), and its gate row is one more reader
of the residual stream. The canonical form folds the MLP's RMSNorm gains into the router, the routed
experts, the shared expert and its gate (all read it). Layers that are dense (`mlp_only_layers`,
`decoder_sparse_step` above 1) are refused in one line: every layer here is a mixture."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.families.llama import BIASES, OUTER_ROWS
from symalign.models.families.llama import ROWS as LLAMA_ROWS
from symalign.models.families.llama import check_config as llama_check
from symalign.models.families.llama import dims as llama_dims
from symalign.models.families.mixtral import BLOCK as MIXTRAL_BLOCK
from symalign.models.families.mixtral import EXPERT_ROWS, moe_family, moe_test_configs
from symalign.models.layout import Dims, shared_expert_spaces
from symalign.models.weight_map import layer_rows

SHARED = {
    "mlp.shared_gate.weight": ("shared:co", "residual:contra"),
    "mlp.shared_up.weight": ("shared:co", "residual:contra"),
    "mlp.shared_proj.weight": ("residual:co", "shared:contra"),
    "mlp.shared_router.weight": (None, "residual:contra"),  # sigmoid(w·x) scales the shared expert's output
}
BLOCK = MIXTRAL_BLOCK | {name: BIASES[name] for name in ("attn.q.bias", "attn.k.bias", "attn.v.bias")} | SHARED
NORM_READERS = {"ln1": ("attn.q", "attn.k", "attn.v"),
                "ln2": ("mlp.router", "mlp.gate", "mlp.up", "mlp.shared_gate", "mlp.shared_up", "mlp.shared_router")}
SHARED_ROWS = layer_rows("model.layers.{i}.", {
    "mlp.shared_gate.weight": "mlp.shared_expert.gate_proj.weight",
    "mlp.shared_up.weight": "mlp.shared_expert.up_proj.weight",
    "mlp.shared_proj.weight": "mlp.shared_expert.down_proj.weight",
    "mlp.shared_router.weight": "mlp.shared_expert_gate.weight",
})
LAYER_ROWS = [(LLAMA_ROWS | EXPERT_ROWS | SHARED_ROWS)[name] for name in BLOCK]


def dims(config) -> Dims:
    return llama_dims(config, d_mlp=config.moe_intermediate_size, n_experts=config.num_experts,
                      d_shared=config.shared_expert_intermediate_size)


def check_config(config) -> None:
    llama_check(config, experts=True)
    if getattr(config, "mlp_only_layers", None) or getattr(config, "decoder_sparse_step", 1) != 1:
        raise ModelLoadError(f"unsupported qwen2_moe layout: dense layers among the mixtures (mlp_only_layers="
                             f"{config.mlp_only_layers}, decoder_sparse_step={config.decoder_sparse_step}); "
                             "every layer must be a mixture of experts")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = False,
                vocab: int = 61, context: int = 32, kv_heads: int | None = None, experts: int = 4, top_k: int = 2,
                shared: int | None = None, **other_families_options):
    """`experts` routed experts of `mlp` units per layer, each token routed to `top_k`; a shared expert of
    `shared` units."""
    from transformers import Qwen2MoeConfig

    return Qwen2MoeConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                          num_key_value_heads=kv_heads or heads, moe_intermediate_size=mlp or width,
                          shared_expert_intermediate_size=shared or 2 * width, intermediate_size=2 * width,
                          hidden_act="silu", vocab_size=vocab, max_position_embeddings=context,
                          tie_word_embeddings=tied, num_experts=experts, num_experts_per_tok=top_k,
                          use_sliding_window=False, bos_token_id=0, eos_token_id=0, pad_token_id=0,
                          architectures=["Qwen2MoeForCausalLM"])


QWEN2_MOE = moe_family(
    name="qwen2_moe",
    model_type="qwen2_moe",
    hf_class_name="Qwen2MoeForCausalLM",
    dims=dims,
    weight_map=lambda config: OUTER_ROWS + LAYER_ROWS,
    title="Qwen2-MoE",
    check_config=check_config,
    spaces=shared_expert_spaces,
    block=BLOCK,
    norm_readers=NORM_READERS,
    tiny=tiny_config,
    test_configs=moe_test_configs(tiny_config, shared=[6, 16]),
)
