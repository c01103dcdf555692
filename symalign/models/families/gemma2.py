"""Gemma 2 (Gemma2ForCausalLM): Llama's attention (grouped queries, RoPE, a head size of its own) with
sandwich norms, a GeGLU MLP, RMSNorm gains stored as w with the norm multiplying by 1 + w, soft-capped
attention scores and logits, and sliding-window attention in every other layer.

What a post-branch norm leaves of the residual's group: each branch's output f passes RMSNorm before
it is added, (1 + w) ⊙ f / rms(f). The norm divides out any orthogonal map of f, but its gains multiply
coordinate by coordinate in the residual's basis and nothing after them (the residual sum) can absorb
them, so a residual map must commute with every diagonal gain: permutations only (and sign flips,
which symalign does not use). With nothing to fold, the canonical form is the model as it is (as for
post-LN BERT). The +1 offset moves with a permutation (P(1 + w) = 1 + Pw), so the gains are tagged as
any norm's. Soft-capping acts on the attention scores qᵀk and on the logits, which every admissible
map leaves unchanged; the sliding window is a mask over positions, which no weight symmetry sees."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.families.llama import (
    BLOCK,
    FINAL_NORM,
    HOOK_POINTS,
    NORM_READERS,
    OUTER,
    OUTER_ROWS,
    ROWS,
    head_size,
)
from symalign.models.families.llama import dims as llama_dims
from symalign.models.family import Family
from symalign.models.layout import Dims, grouped_attention_spaces
from symalign.models.weight_map import layer_rows

# Llama's input_layernorm is ln1; Gemma 2's post_attention_layernorm is the norm *after* attention (the
# sandwich), and pre_feedforward_layernorm plays Llama's ln2.
SANDWICH = {"ln1.post.weight": ("residual:diag",), "ln2.post.weight": ("residual:diag",)}
GEMMA_ROWS = ROWS | layer_rows("model.layers.{i}.", {
    "ln2.weight": "pre_feedforward_layernorm.weight",
    "ln1.post.weight": "post_attention_layernorm.weight",
    "ln2.post.weight": "post_feedforward_layernorm.weight",
})
LAYER_ROWS = [GEMMA_ROWS[name] for name in BLOCK | SANDWICH]


def activation(config) -> str:
    return getattr(config, "hidden_activation", None) or config.hidden_act


def dims(config) -> Dims:
    size = head_size(config)
    return llama_dims(config, activation=activation(config), norm="sandwich-rmsnorm", rotary_dims=size,
                      head_size=size)




def check_config(config) -> None:
    def refuse(what: str) -> None:
        raise ModelLoadError(f"unsupported gemma2 layout: {what}")

    heads, kv = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    if heads % kv:
        refuse(f"{heads} query heads do not split into {kv} key/value groups")
    if head_size(config) % 2:
        refuse("an odd head size (RoPE needs frequency pairs)")
    if not activation(config).startswith("gelu"):
        refuse(f"hidden_activation {activation(config)!r} (Gemma 2's gated MLP is GeGLU)")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, tied: bool = True,
                vocab: int = 61, context: int = 32, kv_heads: int | None = None, head_dim: int | None = None,
                window: int = 8, **other_families_options):
    """`head_dim`: a head size other than width / heads; `window`: the sliding layers' window (every other
    layer slides, as in Gemma 2)."""
    from transformers import Gemma2Config

    size = head_dim or width // heads
    return Gemma2Config(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                        num_key_value_heads=kv_heads or heads, head_dim=size, intermediate_size=mlp or 4 * width,
                        hidden_activation="gelu_pytorch_tanh", vocab_size=vocab, max_position_embeddings=context,
                        tie_word_embeddings=tied, query_pre_attn_scalar=size, sliding_window=window,
                        attn_logit_softcapping=50.0, final_logit_softcapping=30.0, pad_token_id=0, bos_token_id=0,
                        eos_token_id=0, architectures=["Gemma2ForCausalLM"])


def test_configs(rng, n: int) -> list:
    """Grouped queries, head sizes of their own, tied or untied, windows shorter than the test inputs."""
    out = []
    for _ in range(n):
        heads = rng.choice([2, 4])
        width = heads * rng.choice([4, 8])
        out.append(tiny_config(layers=rng.choice([1, 2, 3]), width=width, heads=heads,
                               kv_heads=rng.choice([h for h in (1, 2, 4) if h <= heads]),
                               head_dim=rng.choice([width // heads, 6, 12]), mlp=rng.choice([16, 24]),
                               tied=rng.random() < 0.5, window=rng.choice([4, 8])))
    return out


GEMMA2 = Family(
    name="gemma2",
    model_type="gemma2",
    hf_class_name="Gemma2ForCausalLM",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: OUTER_ROWS + LAYER_ROWS,
    title="Gemma 2",
    canonical_config=lambda config: config,  # nothing to fold (the residual admits permutations only)
    check_config=check_config,
    spaces=grouped_attention_spaces,
    hook_points=HOOK_POINTS,
    block=BLOCK | SANDWICH,
    final_norm=FINAL_NORM,
    norm_readers=NORM_READERS,
    tiny=tiny_config,
    test_configs=test_configs,
)
