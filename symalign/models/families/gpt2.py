"""GPT-2 (GPT2LMHeadModel): Conv1D weights are [in, out] with q|k|v concatenated on the output axis."""

from __future__ import annotations

from symalign.errors import ModelLoadError
from symalign.models.family import Family, varied_configs
from symalign.models.layout import Dims
from symalign.models.weight_map import Row, layer_rows

OUTER = {
    "embed.token": (None, "residual:co"),
    "embed.position": (None, "residual:co"),
    "head.weight": (None, "residual:contra"),
}


def dims(config) -> Dims:
    d = config.n_embd
    return Dims(config.n_layer, config.n_head, d, config.n_inner or 4 * d, config.activation_function)


# The weight map (symalign.models.weight_map): Conv1D weights are [in, out]; c_attn holds q | k | v.
ROWS = [Row("embed.token", "transformer.wte.weight"), Row("embed.position", "transformer.wpe.weight"),
        Row("norm.weight", "transformer.ln_f.weight"), Row("norm.bias", "transformer.ln_f.bias"),
        Row("head.weight", "lm_head.weight", fallback="transformer.wte.weight"),
        *layer_rows("transformer.h.{i}.", {
            **{f"attn.{n}.weight": ("attn.c_attn.weight", "d (three h dh) -> three h dh d", j)
               for j, n in enumerate("qkv")},
            **{f"attn.{n}.bias": ("attn.c_attn.bias", "(three h dh) -> three h dh", j) for j, n in enumerate("qkv")},
            "attn.o.weight": ("attn.c_proj.weight", "(h dh) d -> d h dh"),
            "attn.o.bias": "attn.c_proj.bias",
            "ln1.weight": "ln_1.weight", "ln1.bias": "ln_1.bias", "ln2.weight": "ln_2.weight", "ln2.bias": "ln_2.bias",
            "mlp.fc.weight": ("mlp.c_fc.weight", "d m -> m d"),
            "mlp.fc.bias": "mlp.c_fc.bias",
            "mlp.proj.weight": ("mlp.c_proj.weight", "m d -> d m"),
            "mlp.proj.bias": "mlp.c_proj.bias",
        }).values()]


def check_config(config) -> None:
    if getattr(config, "add_cross_attention", False):
        raise ModelLoadError("GPT-2 with cross-attention is not supported (its encoder stream has its own symmetries)")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, activation: str = "gelu",
                tied: bool = True, vocab: int = 61, context: int = 32, **other_families_options):
    from transformers import GPT2Config

    return GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_inner=mlp or 4 * width,
                      activation_function=activation,
                      vocab_size=vocab, n_positions=context, tie_word_embeddings=tied, bos_token_id=0, eos_token_id=0,
                      architectures=["GPT2LMHeadModel"])


def test_configs(rng, n: int) -> list:
    """Layers, heads, widths, tied or untied, GELU (both forms) or ReLU."""
    return varied_configs(tiny_config, rng, n, ["gelu", "relu", "gelu_new"])


GPT2 = Family(
    name="gpt2",
    model_type="gpt2",
    hf_class_name="GPT2LMHeadModel",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: ROWS,
    title="GPT-2",
    check_config=check_config,
    hook_points={"mlp": "transformer.h.{i}.mlp.c_proj", "heads": "transformer.h.{i}.attn.c_proj",
                 "qkv": "transformer.h.{i}.attn.c_attn"},
    tiny=tiny_config,
    test_configs=test_configs,
)
