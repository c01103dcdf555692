"""Llama (LlamaForCausalLM; Mistral without a sliding window; Qwen2): RMSNorm, RoPE, grouped-query
attention, SwiGLU; biases where the config has them (Qwen2's q/k/v, Llama's attention_bias and
mlp_bias), each moving with the rows of its weight.

What differs from GPT-2 is all declarative: the block's tag rows below (query heads carry a group
axis, the MLP a gate beside its up projection) and the Dims flags that make the spec refuse what
RMSNorm, RoPE and SwiGLU break. Matchers, barriers and the app read the same spec as for GPT-2."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.family import Family
from symalign.models.layout import Dims, grouped_attention_spaces
from symalign.models.weight_map import Row, layer_rows

OUTER = {
    "embed.token": (None, "residual:co"),
    "head.weight": (None, "residual:contra"),
}

# q: [H_kv, g, d_head, d]; k, v: [H_kv, d_head, d]; o: [d, H_kv, g, d_head]. The heads space permutes
# key/value heads (their query heads move with them), qheads the query heads inside each group.
BLOCK = {
    "ln1.weight": ("residual:diag",),
    "attn.q.weight": ("heads:co", "qheads:co", "qk:co", "residual:contra"),
    "attn.k.weight": ("heads:co", "qk:contra", "residual:contra"),
    "attn.v.weight": ("heads:co", "vo:co", "residual:contra"),
    "attn.o.weight": ("residual:co", "heads:contra", "qheads:contra", "vo:contra"),
    "ln2.weight": ("residual:diag",),
    "mlp.gate.weight": ("mlp:co", "residual:contra"),
    "mlp.up.weight": ("mlp:co", "residual:contra"),
    "mlp.proj.weight": ("residual:co", "mlp:contra"),
}
# Optional biases: q [H_kv, g, d_head], k and v [H_kv, d_head], o and the MLP's as their weights' rows.
BIASES = {
    "attn.q.bias": ("heads:co", "qheads:co", "qk:co"),
    "attn.k.bias": ("heads:co", "qk:contra"),
    "attn.v.bias": ("heads:co", "vo:co"),
    "attn.o.bias": ("residual:co",),
    "mlp.gate.bias": ("mlp:co",),
    "mlp.up.bias": ("mlp:co",),
    "mlp.proj.bias": ("residual:co",),
}
FINAL_NORM = {"norm.weight": ("residual:diag",)}
NORM_READERS = {"ln1": ("attn.q", "attn.k", "attn.v"), "ln2": ("mlp.gate", "mlp.up")}
# The weight map (symalign.models.weight_map): Hugging Face name, and the reshape into the logical layout.
OUTER_ROWS = [Row("embed.token", "model.embed_tokens.weight"), Row("norm.weight", "model.norm.weight"),
              Row("head.weight", "lm_head.weight", fallback="model.embed_tokens.weight")]
ROWS = layer_rows("model.layers.{i}.", {
    "ln1.weight": "input_layernorm.weight",
    "attn.q.weight": ("self_attn.q_proj.weight", "(kv g dh) d -> kv g dh d"),
    "attn.k.weight": ("self_attn.k_proj.weight", "(kv dh) d -> kv dh d"),
    "attn.v.weight": ("self_attn.v_proj.weight", "(kv dh) d -> kv dh d"),
    "attn.o.weight": ("self_attn.o_proj.weight", "d (kv g dh) -> d kv g dh"),
    "ln2.weight": "post_attention_layernorm.weight",
    "mlp.gate.weight": "mlp.gate_proj.weight",
    "mlp.up.weight": "mlp.up_proj.weight",
    "mlp.proj.weight": "mlp.down_proj.weight",
    "attn.q.bias": ("self_attn.q_proj.bias", "(kv g dh) -> kv g dh"),
    "attn.k.bias": ("self_attn.k_proj.bias", "(kv dh) -> kv dh"),
    "attn.v.bias": ("self_attn.v_proj.bias", "(kv dh) -> kv dh"),
    "attn.o.bias": "self_attn.o_proj.bias",
    "mlp.gate.bias": "mlp.gate_proj.bias",
    "mlp.up.bias": "mlp.up_proj.bias",
    "mlp.proj.bias": "mlp.down_proj.bias",
})


def biases(config) -> tuple[str, ...]:
    """The logical bias tensors a layer of this config has: Qwen2 always biases q, k and v; Llama and
    Mistral bias all four attention projections with attention_bias and the MLP with mlp_bias."""
    out = ()
    if config.model_type == "qwen2":
        out += ("attn.q.bias", "attn.k.bias", "attn.v.bias")
    elif getattr(config, "attention_bias", False):
        out += ("attn.q.bias", "attn.k.bias", "attn.v.bias", "attn.o.bias")
    if getattr(config, "mlp_bias", False):
        out += ("mlp.gate.bias", "mlp.up.bias", "mlp.proj.bias")
    return out


def block(config) -> dict[str, tuple[str, ...]]:
    return BLOCK | {name: BIASES[name] for name in biases(config)}


def dims(config, **changes) -> Dims:
    """Llama's sizes and flags; `changes` are what a Llama-shaped family differs in (Qwen3's own head size
    and q/k norm, Gemma 2's sandwich norms, Phi-3's partial rotary, Mixtral's experts)."""
    return Dims(**{"n_layer": config.num_hidden_layers, "n_head": config.num_attention_heads,
                   "d_model": config.hidden_size, "d_mlp": config.intermediate_size,
                   "activation": changes.get("activation") or config.hidden_act,
                   "n_kv_head": config.num_key_value_heads or config.num_attention_heads, "norm": "rmsnorm",
                   "rotary_dims": config.hidden_size // config.num_attention_heads, "gated": True, **changes})


def head_size(config) -> int:
    """A head's size: config.head_dim where the family reads it (Qwen3, Gemma 2), else width / heads."""
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def rows(config) -> list[Row]:
    """The weight map of this config: the block's tensors (biases only where the config has them)."""
    return OUTER_ROWS + [ROWS[name] for name in block(config)]




def check_config(config, own_head_dim: bool = False, experts: bool = False) -> None:
    """Refuse, in one line each, the Llama-shaped layouts whose symmetries this spec does not describe.
    `own_head_dim`: the family reads config.head_dim (Qwen3), so it need not be width / heads; `experts`: the
    family is a mixture of experts (Mixtral), whose expert count is not a refusal."""
    def refuse(what: str) -> None:
        raise ModelLoadError(f"unsupported {config.model_type} layout: {what}")

    layer_types = getattr(config, "layer_types", None)  # Qwen2: which layers slide (max_window_layers)
    sliding = (any(t != "full_attention" for t in layer_types) if layer_types else
               getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True))
    if sliding:
        refuse(f"sliding-window attention (sliding_window={config.sliding_window}); symalign supports full "
               "attention in every layer")
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if getattr(config, key, None) and not experts:
            refuse(f"mixture of experts ({key}={getattr(config, key)}): expert routing has symmetries of its own")
    if getattr(config, "pretraining_tp", 1) not in (1, None):
        refuse(f"tensor-parallel emulation (pretraining_tp={config.pretraining_tp}); set it to 1")
    heads, kv = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None)
    if own_head_dim and head_dim:
        size = head_dim
    else:
        if config.hidden_size % heads:
            refuse(f"width {config.hidden_size} is not divisible by its {heads} heads")
        if head_dim not in (None, config.hidden_size // heads):
            refuse(f"head_dim {head_dim} differs from width / heads = {config.hidden_size // heads}")
        size = config.hidden_size // heads
    if heads % kv:
        refuse(f"{heads} query heads do not split into {kv} key/value groups")
    if size % 2:
        refuse("an odd head size (RoPE needs frequency pairs)")
    if config.hidden_act not in ("silu", "swish"):
        refuse(f"hidden_act {config.hidden_act!r} (the gated MLP here is SwiGLU: silu)")


def _tiny(model_type: str, config_class: str):
    def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = True,
                    vocab: int = 61, context: int = 32, kv_heads: int | None = None, attention_bias: bool = False,
                    mlp_bias: bool = False, **other_families_options):
        """`attention_bias`, `mlp_bias`: Llama only (Qwen2 has q/k/v biases of its own; Mistral none)."""
        import transformers

        options = dict(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                       num_key_value_heads=kv_heads or heads, intermediate_size=mlp or 4 * width, hidden_act="silu",
                       vocab_size=vocab, max_position_embeddings=context, tie_word_embeddings=tied, bos_token_id=0,
                       eos_token_id=0, rope_theta=10000.0, architectures=[HF_CLASSES[model_type]])
        if model_type == "llama":
            options.update(attention_bias=attention_bias, mlp_bias=mlp_bias)
        return getattr(transformers, config_class)(**options)

    def test_configs(rng, n: int) -> list:
        """Grouped queries (1, 2 or all heads per key/value head), even head sizes for RoPE, ties; Llama
        also with and without attention/MLP biases."""
        out = []
        for _ in range(n):
            heads = rng.choice([2, 4])
            biases = dict(attention_bias=rng.random() < 0.4,
                          mlp_bias=rng.random() < 0.3) if model_type == "llama" else {}
            out.append(tiny_config(layers=rng.choice([1, 2, 3]), width=heads * rng.choice([4, 8]), heads=heads,
                                   kv_heads=rng.choice([h for h in (1, 2, 4) if h <= heads]),
                                   mlp=rng.choice([16, 24, 48]), tied=rng.random() < 0.5, **biases))
        return out

    return tiny_config, test_configs


# Modules whose inputs are the MLP units and head outputs, whose outputs are q and k (Qwen3, Gemma 2 share them)
HOOK_POINTS = {"mlp": "model.layers.{i}.mlp.down_proj", "heads": "model.layers.{i}.self_attn.o_proj",
               "q": "model.layers.{i}.self_attn.q_proj", "k": "model.layers.{i}.self_attn.k_proj"}
HF_CLASSES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}
CONFIG_CLASSES = {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config"}


def _family(model_type: str, hf_class_name: str) -> Family:
    tiny, tests = _tiny(model_type, CONFIG_CLASSES[model_type])
    return Family(
        name="llama",
        model_type=model_type,
        hf_class_name=hf_class_name,
        outer_tags=OUTER,
        dims=dims,
        weight_map=rows,
        title="Llama",
        check_config=check_config,
        spaces=grouped_attention_spaces,
        hook_points=HOOK_POINTS,
        block=block,
        final_norm=FINAL_NORM,
        norm_readers=NORM_READERS,
        task="causal-lm",
        tiny=tiny,
        test_configs=tests,
    )


LLAMA = _family("llama", "LlamaForCausalLM")
MISTRAL = _family("mistral", "MistralForCausalLM")
QWEN2 = _family("qwen2", "Qwen2ForCausalLM")
