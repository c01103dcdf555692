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
from symalign.models.family import Family
from symalign.models.layout import BLOCK, Dims
from symalign.models.weight_map import Row, layer_rows, multi_head_table

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


def encoder_rows(p0: str) -> list[Row]:
    """The weight map of the embeddings and blocks of `{p0}.` (bert, roberta): what every head shares."""
    e = f"{p0}.embeddings."
    return [Row("embed.token", e + "word_embeddings.weight"), Row("embed.position", e + "position_embeddings.weight"),
            Row("embed.type", e + "token_type_embeddings.weight"), Row("embed.norm.weight", e + "LayerNorm.weight"),
            Row("embed.norm.bias", e + "LayerNorm.bias"),
            *layer_rows(f"{p0}.encoder.layer.{{i}}.", multi_head_table(
                {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value"},
                "attention.output.dense",
                {"ln1": "attention.output.LayerNorm", "mlp.fc": "intermediate.dense", "mlp.proj": "output.dense",
                 "ln2": "output.LayerNorm"})).values()]


def mlm_rows(kind: str) -> list[Row]:
    """The masked-LM model's map: the encoder's, then the head (its bias saved twice: as the decoder's and as
    the head's own, which Hugging Face ties)."""
    names = NAMES[kind]
    return encoder_rows(names["prefix"]) + [
        Row("head.transform.weight", names["transform"] + ".weight"),
        Row("head.transform.bias", names["transform"] + ".bias"),
        Row("head.transform_norm.weight", names["transform_norm"] + ".weight"),
        Row("head.transform_norm.bias", names["transform_norm"] + ".bias"),
        Row("head.weight", names["decoder"] + ".weight",
            fallback=f"{names['prefix']}.embeddings.word_embeddings.weight"),
        Row("head.bias", names["bias"]),
        Row("head.bias", names["decoder"] + ".bias", fallback=names["bias"]),
    ]


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
    rows = mlm_rows(kind)
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
        weight_map=lambda config: rows,
        title=kind,
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
