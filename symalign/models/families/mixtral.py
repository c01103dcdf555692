"""Mixtral (MixtralForCausalLM): Llama's attention with a mixture of experts in place of the MLP: a
router (`mlp.gate`, one row per expert) picks each token's top-k experts, each a SwiGLU MLP (transformers
5 stores them fused: `experts.gate_up_proj` [E, 2·m, d], `experts.down_proj` [E, d, m]).

The symmetry the anchors never align: the experts of a layer can be reordered together with the router's
rows (the top-k choice and its weights follow them), and inside each expert its MLP units permute on their
own. So a layer has an `experts` space (kind experts: permutations only) and its `mlp` space is batched
by it, one permutation per expert, as per-head maps are batched by heads. Weight matching pairs experts
by a cost no unit permutation changes (`symalign.match.experts`), then solves each expert's units; the
router's rows and every expert's tensors move with the expert. The canonical form folds the MLP's
RMSNorm gains into the router as well as into the experts (all three read it)."""

from __future__ import annotations

from symalign.models.families.llama import BLOCK as LLAMA_BLOCK
from symalign.models.families.llama import FINAL_NORM, OUTER, OUTER_ROWS, ROWS
from symalign.models.families.llama import check_config as llama_check
from symalign.models.families.llama import dims as llama_dims
from symalign.models.family import Family
from symalign.models.layout import Dims, expert_spaces
from symalign.models.weight_map import layer_rows

# router [E, d]; gate, up [E, m, d]; down [E, d, m]
EXPERTS = {
    "mlp.router.weight": ("experts:co", "residual:contra"),
    "mlp.gate.weight": ("experts:co", "mlp:co", "residual:contra"),
    "mlp.up.weight": ("experts:co", "mlp:co", "residual:contra"),
    "mlp.proj.weight": ("experts:co", "residual:co", "mlp:contra"),
}
BLOCK = {k: v for k, v in LLAMA_BLOCK.items() if not k.startswith("mlp.")} | EXPERTS
NORM_READERS = {"ln1": ("attn.q", "attn.k", "attn.v"), "ln2": ("mlp.router", "mlp.gate", "mlp.up")}
EXPERT_ROWS = layer_rows("model.layers.{i}.", {
    "mlp.router.weight": "mlp.gate.weight",
    "mlp.gate.weight": ("mlp.experts.gate_up_proj", "e (two m) d -> two e m d", 0),
    "mlp.up.weight": ("mlp.experts.gate_up_proj", "e (two m) d -> two e m d", 1),
    "mlp.proj.weight": "mlp.experts.down_proj",
})
LAYER_ROWS = [(ROWS | EXPERT_ROWS)[name] for name in BLOCK]


def dims(config) -> Dims:
    return llama_dims(config, n_experts=config.num_local_experts)




def check_config(config) -> None:
    llama_check(config, experts=True)


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = False,
                vocab: int = 61, context: int = 32, kv_heads: int | None = None, experts: int = 4, top_k: int = 2,
                **other_families_options):
    """`experts` per layer, each token routed to `top_k` of them."""
    from transformers import MixtralConfig

    return MixtralConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                         num_key_value_heads=kv_heads or heads, intermediate_size=mlp or 2 * width, hidden_act="silu",
                         vocab_size=vocab, max_position_embeddings=context, tie_word_embeddings=tied,
                         num_local_experts=experts, num_experts_per_tok=top_k, sliding_window=None, bos_token_id=0,
                         eos_token_id=0, pad_token_id=0, architectures=["MixtralForCausalLM"])


def moe_test_configs(tiny, **choices):
    """Varied small configs of a mixture-of-experts family: experts 2-4, top-1 or top-2 routing, grouped
    queries, tied or untied; `choices`: the family's own options and the values drawn for them."""
    def test_configs(rng, n: int) -> list:
        out = []
        for _ in range(n):
            heads = rng.choice([2, 4])
            experts = rng.choice([2, 3, 4])
            out.append(tiny(layers=rng.choice([1, 2]), width=heads * rng.choice([4, 8]), heads=heads,
                            kv_heads=rng.choice([h for h in (1, 2, 4) if h <= heads]), mlp=rng.choice([8, 12]),
                            tied=rng.random() < 0.3, experts=experts, top_k=rng.choice([1, 2]),
                            **{k: rng.choice(v) for k, v in choices.items()}))
        return out

    return test_configs


def moe_family(**declared) -> Family:
    """A mixture of experts on Llama's attention: what every one shares (Llama's embedding and head rows
    and final norm, the expert spaces, no hook points: activation matching of experts is not built, each
    expert sees only its routed tokens), and what `declared` says of this one."""
    return Family(**{"outer_tags": OUTER, "final_norm": FINAL_NORM, "spaces": expert_spaces, "hook_points": {},
                     **declared})


MIXTRAL = moe_family(
    name="mixtral",
    model_type="mixtral",
    hf_class_name="MixtralForCausalLM",
    dims=dims,
    weight_map=lambda config: OUTER_ROWS + LAYER_ROWS,
    title="Mixtral",
    check_config=check_config,
    block=BLOCK,
    norm_readers=NORM_READERS,
    tiny=tiny_config,
    test_configs=moe_test_configs(tiny_config),
)
