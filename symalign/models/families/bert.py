"""BERT (BertForMaskedLM) and RoBERTa (RobertaForMaskedLM): post-LN encoders with a masked-LM head.

Post-LN puts every LayerNorm on the residual stream itself (x ← LN(x + f(x))), so the residual
admits permutations only (the spec says why); there is nothing to fold, and the canonical form is
the model as it is. The block's tag rows are GPT-2's (ln1 after attention, ln2 after the MLP).
The MLM head's transform maps the residual to a space that its tied decoder shares with the
token embedding, so that space *is* the residual basis: it is tagged as such, which keeps tied
and untied heads exact under a residual permutation."""

from __future__ import annotations

import torch

from symalign.errors import ModelLoadError
from symalign.models.family import Family, Tensors, check_tied
from symalign.models.layout import BLOCK, Dims

OUTER = {
    "embed.token": (None, "residual:co"),
    "embed.position": (None, "residual:co"),
    "embed.type": (None, "residual:co"),
    "embed.norm.weight": ("residual:diag",),
    "embed.norm.bias": ("residual:co",),
    "head.transform.weight": ("residual:co", "residual:contra"),
    "head.transform.bias": ("residual:co",),
    "head.transform_norm.weight": ("residual:diag",),
    "head.transform_norm.bias": ("residual:co",),
    "head.weight": (None, "residual:contra"),
    "head.bias": (None,),
}
NAMES = {  # logical name -> Hugging Face name, per family ({p}: the encoder's prefix)
    "bert": {"prefix": "bert", "transform": "cls.predictions.transform.dense",
             "transform_norm": "cls.predictions.transform.LayerNorm", "decoder": "cls.predictions.decoder",
             "bias": "cls.predictions.bias"},
    "roberta": {"prefix": "roberta", "transform": "lm_head.dense", "transform_norm": "lm_head.layer_norm",
                "decoder": "lm_head.decoder", "bias": "lm_head.bias"},
}


def dims(config) -> Dims:
    return Dims(config.num_hidden_layers, config.num_attention_heads, config.hidden_size, config.intermediate_size,
                config.hidden_act, norm="post-layernorm")


def _linear(sd: Tensors, out: Tensors, hf: str, logical: str) -> None:
    out[logical + ".weight"], out[logical + ".bias"] = sd[hf + ".weight"], sd[hf + ".bias"]


def encoder_to_logical(sd: Tensors, config, p0: str) -> Tensors:
    """The embeddings and blocks of `{p0}.` (bert, roberta) in the logical layout: what every head shares."""
    dm = dims(config)
    h, dh, d = dm.n_head, dm.d_head, dm.d_model
    e = f"{p0}.embeddings."
    out = {
        "embed.token": sd[e + "word_embeddings.weight"],
        "embed.position": sd[e + "position_embeddings.weight"],
        "embed.type": sd[e + "token_type_embeddings.weight"],
        "embed.norm.weight": sd[e + "LayerNorm.weight"],
        "embed.norm.bias": sd[e + "LayerNorm.bias"],
    }
    for i in range(dm.n_layer):
        p, q = f"{p0}.encoder.layer.{i}.", f"layer.{i}."
        for n, hf in (("q", "query"), ("k", "key"), ("v", "value")):
            out[q + f"attn.{n}.weight"] = sd[p + f"attention.self.{hf}.weight"].reshape(h, dh, d)
            out[q + f"attn.{n}.bias"] = sd[p + f"attention.self.{hf}.bias"].reshape(h, dh)
        out[q + "attn.o.weight"] = sd[p + "attention.output.dense.weight"].reshape(d, h, dh)
        out[q + "attn.o.bias"] = sd[p + "attention.output.dense.bias"]
        _linear(sd, out, p + "attention.output.LayerNorm", q + "ln1")
        _linear(sd, out, p + "intermediate.dense", q + "mlp.fc")
        _linear(sd, out, p + "output.dense", q + "mlp.proj")
        _linear(sd, out, p + "output.LayerNorm", q + "ln2")
    return out


def encoder_from_logical(t: Tensors, config, p0: str) -> Tensors:
    dm = dims(config)
    d = dm.d_model
    e = f"{p0}.embeddings."
    sd = {
        e + "word_embeddings.weight": t["embed.token"],
        e + "position_embeddings.weight": t["embed.position"],
        e + "token_type_embeddings.weight": t["embed.type"],
        e + "LayerNorm.weight": t["embed.norm.weight"],
        e + "LayerNorm.bias": t["embed.norm.bias"],
    }
    for i in range(dm.n_layer):
        p, q = f"{p0}.encoder.layer.{i}.", f"layer.{i}."
        for n, hf in (("q", "query"), ("k", "key"), ("v", "value")):
            sd[p + f"attention.self.{hf}.weight"] = t[q + f"attn.{n}.weight"].reshape(d, d)
            sd[p + f"attention.self.{hf}.bias"] = t[q + f"attn.{n}.bias"].reshape(d)
        sd[p + "attention.output.dense.weight"] = t[q + "attn.o.weight"].reshape(d, d)
        sd[p + "attention.output.dense.bias"] = t[q + "attn.o.bias"]
        for local, hf in (("ln1", "attention.output.LayerNorm"), ("mlp.fc", "intermediate.dense"),
                          ("mlp.proj", "output.dense"), ("ln2", "output.LayerNorm")):
            sd[p + hf + ".weight"], sd[p + hf + ".bias"] = t[q + local + ".weight"], t[q + local + ".bias"]
    return sd  # views where the layout allows: writers make them contiguous (export_module)


def _adapter(kind: str):
    names = NAMES[kind]
    p0 = names["prefix"]

    def to_logical(sd: Tensors, config) -> Tensors:
        e = f"{p0}.embeddings."
        out = encoder_to_logical(sd, config, p0)
        out.update({
            "head.transform_norm.weight": sd[names["transform_norm"] + ".weight"],
            "head.transform_norm.bias": sd[names["transform_norm"] + ".bias"],
            "head.weight": sd.get(names["decoder"] + ".weight", sd[e + "word_embeddings.weight"]),
            "head.bias": sd[names["bias"]],
        })
        _linear(sd, out, names["transform"], "head.transform")
        return {k: v.contiguous() for k, v in out.items()}

    def from_logical(t: Tensors, config) -> Tensors:
        check_tied(t, config, kind)
        sd = encoder_from_logical(t, config, p0)
        sd.update({
            names["transform"] + ".weight": t["head.transform.weight"],
            names["transform"] + ".bias": t["head.transform.bias"],
            names["transform_norm"] + ".weight": t["head.transform_norm.weight"],
            names["transform_norm"] + ".bias": t["head.transform_norm.bias"],
            names["decoder"] + ".weight": t["head.weight"],
            names["decoder"] + ".bias": t["head.bias"],
            names["bias"]: t["head.bias"],
        })
        return sd

    return to_logical, from_logical


def canonical_config(config):
    """Post-LN has nothing to absorb: the canonical form is the model as it is."""
    return config


def random_inputs(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    length = min(config.max_position_embeddings - 2, 16)  # RoBERTa's positions start after its padding index
    ids = torch.randint(0, config.vocab_size, (n, length), generator=generator)
    types = torch.randint(0, config.type_vocab_size, (n, length), generator=generator)
    return {"input_ids": ids, "token_type_ids": types}


def check_config(config) -> None:
    def refuse(what: str) -> None:
        raise ModelLoadError(f"unsupported {config.model_type} layout: {what}")

    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        refuse("a decoder or cross-attention configuration (symalign reads the masked-LM encoder)")
    if getattr(config, "position_embedding_type", "absolute") != "absolute":
        refuse(f"position_embedding_type {config.position_embedding_type!r} (absolute positions only)")


def _family(kind: str, hf_class_name: str) -> Family:
    to_logical, from_logical = _adapter(kind)
    p0 = NAMES[kind]["prefix"]

    def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None,
                    activation: str = "gelu",
                    tied: bool = True, vocab: int = 61, context: int = 32, **other_families_options):
        import transformers

        cls = getattr(transformers, "BertConfig" if kind == "bert" else "RobertaConfig")
        return cls(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                   intermediate_size=mlp or 4 * width,
                   hidden_act=activation, vocab_size=vocab, max_position_embeddings=context + 2,
                   tie_word_embeddings=tied, pad_token_id=0, architectures=[hf_class_name])

    def test_configs(rng, n: int) -> list:
        """Post-LN encoders: tied or untied decoder, GELU or ReLU."""
        out = []
        for _ in range(n):
            heads = rng.choice([1, 2, 4])
            out.append(tiny_config(layers=rng.choice([1, 2, 3]), width=heads * rng.choice([4, 8]), heads=heads,
                                   mlp=rng.choice([16, 24, 48]), activation=rng.choice(["gelu", "relu"]),
                                   tied=rng.random() < 0.5))
        return out

    return Family(
        name=kind,
        model_type=kind,
        hf_class_name=hf_class_name,
        outer_tags=OUTER,
        dims=dims,
        to_logical=to_logical,
        from_logical=from_logical,
        canonical_config=canonical_config,
        random_inputs=random_inputs,
        check_config=check_config,
        hook_points={"mlp": p0 + ".encoder.layer.{i}.output.dense",
                     "heads": p0 + ".encoder.layer.{i}.attention.output.dense",
                     "q": p0 + ".encoder.layer.{i}.attention.self.query",
                     "k": p0 + ".encoder.layer.{i}.attention.self.key"},
        block=BLOCK,
        norm_readers={},
        final_norm={},
        task="masked-lm",
        context=lambda config: config.max_position_embeddings - 2 if config.model_type == "roberta"
        else config.max_position_embeddings,
        tiny=tiny_config,
        test_configs=test_configs,
    )


BERT = _family("bert", "BertForMaskedLM")
ROBERTA = _family("roberta", "RobertaForMaskedLM")
