"""GPT-2 (GPT2LMHeadModel): Conv1D weights are [in, out] with q|k|v concatenated on the output axis."""

from __future__ import annotations

import torch

from symalign.errors import ModelLoadError
from symalign.models.family import Family, Tensors, check_tied, token_inputs, untied_config, varied_configs
from symalign.models.layout import Dims

OUTER = {
    "embed.token": (None, "residual:co"),
    "embed.position": (None, "residual:co"),
    "head.weight": (None, "residual:contra"),
}


def dims(config) -> Dims:
    d = config.n_embd
    return Dims(config.n_layer, config.n_head, d, config.n_inner or 4 * d, config.activation_function)


def to_logical(sd: Tensors, config) -> Tensors:
    dm = dims(config)
    h, dh = dm.n_head, dm.d_head
    out = {
        "embed.token": sd["transformer.wte.weight"],
        "embed.position": sd["transformer.wpe.weight"],
        "norm.weight": sd["transformer.ln_f.weight"],
        "norm.bias": sd["transformer.ln_f.bias"],
        "head.weight": sd.get("lm_head.weight", sd["transformer.wte.weight"]),
    }
    for i in range(dm.n_layer):
        p, q = f"transformer.h.{i}.", f"layer.{i}."
        w = sd[p + "attn.c_attn.weight"].T.reshape(3, h, dh, dm.d_model)
        b = sd[p + "attn.c_attn.bias"].reshape(3, h, dh)
        for j, name in enumerate("qkv"):
            out[q + f"attn.{name}.weight"], out[q + f"attn.{name}.bias"] = w[j], b[j]
        out[q + "attn.o.weight"] = sd[p + "attn.c_proj.weight"].T.reshape(dm.d_model, h, dh)
        out[q + "attn.o.bias"] = sd[p + "attn.c_proj.bias"]
        for ln, hf in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[q + f"{ln}.weight"], out[q + f"{ln}.bias"] = sd[p + f"{hf}.weight"], sd[p + f"{hf}.bias"]
        out[q + "mlp.fc.weight"], out[q + "mlp.fc.bias"] = sd[p + "mlp.c_fc.weight"].T, sd[p + "mlp.c_fc.bias"]
        out[q + "mlp.proj.weight"], out[q + "mlp.proj.bias"] = sd[p + "mlp.c_proj.weight"].T, sd[p + "mlp.c_proj.bias"]
    return {k: v.contiguous() for k, v in out.items()}


def from_logical(t: Tensors, config) -> Tensors:
    dm = dims(config)
    d = dm.d_model
    check_tied(t, config, "GPT-2")
    sd = {
        "transformer.wte.weight": t["embed.token"],
        "transformer.wpe.weight": t["embed.position"],
        "transformer.ln_f.weight": t["norm.weight"],
        "transformer.ln_f.bias": t["norm.bias"],
        "lm_head.weight": t["head.weight"],
    }
    for i in range(dm.n_layer):
        p, q = f"transformer.h.{i}.", f"layer.{i}."
        w = torch.cat([t[q + f"attn.{n}.weight"].reshape(d, d) for n in "qkv"], dim=0)
        sd[p + "attn.c_attn.weight"] = w.T
        sd[p + "attn.c_attn.bias"] = torch.cat([t[q + f"attn.{n}.bias"].reshape(d) for n in "qkv"])
        sd[p + "attn.c_proj.weight"] = t[q + "attn.o.weight"].reshape(d, d).T
        sd[p + "attn.c_proj.bias"] = t[q + "attn.o.bias"]
        for ln, hf in (("ln1", "ln_1"), ("ln2", "ln_2")):
            sd[p + f"{hf}.weight"], sd[p + f"{hf}.bias"] = t[q + f"{ln}.weight"], t[q + f"{ln}.bias"]
        sd[p + "mlp.c_fc.weight"], sd[p + "mlp.c_fc.bias"] = t[q + "mlp.fc.weight"].T, t[q + "mlp.fc.bias"]
        sd[p + "mlp.c_proj.weight"], sd[p + "mlp.c_proj.bias"] = t[q + "mlp.proj.weight"].T, t[q + "mlp.proj.bias"]
    return sd  # views where the layout allows: writers make them contiguous (export_module), evaluation need not


def random_inputs(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    return token_inputs(config.vocab_size, config.n_positions, n, generator)


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
    to_logical=to_logical,
    from_logical=from_logical,
    canonical_config=untied_config,
    random_inputs=random_inputs,
    check_config=check_config,
    hook_points={"mlp": "transformer.h.{i}.mlp.c_proj", "heads": "transformer.h.{i}.attn.c_proj",
                 "qkv": "transformer.h.{i}.attn.c_attn"},
    tiny=tiny_config,
    test_configs=test_configs,
)
