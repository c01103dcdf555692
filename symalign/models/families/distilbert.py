"""DistilBERT (DistilBertForMaskedLM): BERT's post-LN encoder under other names (q_lin, out_lin,
sa_layer_norm, ffn.lin1, output_layer_norm; vocab_transform, vocab_layer_norm, vocab_projector), no
token-type embeddings, and learned positions. The symmetry is BERT's: the residual admits permutations
only, every class inside heads; so it reuses BERT's tag rows and differs only in its weight map.

Refused in one line: `sinusoidal_pos_embds=True` (fixed sinusoidal positions are written by
transformers' initialisation, not learned weights a residual permutation may move)."""

from __future__ import annotations

import torch

from symalign.errors import ModelLoadError
from symalign.models.families.bert import OUTER as BERT_OUTER
from symalign.models.families.bert import canonical_config
from symalign.models.family import Family
from symalign.models.layout import BLOCK, Dims
from symalign.models.weight_map import Row, layer_rows, multi_head_table

OUTER = {k: v for k, v in BERT_OUTER.items() if k != "embed.type"}
E = "distilbert.embeddings."
ROWS = [Row("embed.token", E + "word_embeddings.weight"), Row("embed.position", E + "position_embeddings.weight"),
        Row("embed.norm.weight", E + "LayerNorm.weight"), Row("embed.norm.bias", E + "LayerNorm.bias"),
        *layer_rows("distilbert.transformer.layer.{i}.", multi_head_table(
            {n: f"attention.{n}_lin" for n in "qkv"}, "attention.out_lin",
            {"ln1": "sa_layer_norm", "mlp.fc": "ffn.lin1", "mlp.proj": "ffn.lin2",
             "ln2": "output_layer_norm"})).values(),
        Row("head.transform.weight", "vocab_transform.weight"), Row("head.transform.bias", "vocab_transform.bias"),
        Row("head.transform_norm.weight", "vocab_layer_norm.weight"),
        Row("head.transform_norm.bias", "vocab_layer_norm.bias"),
        Row("head.weight", "vocab_projector.weight", fallback=E + "word_embeddings.weight"),
        Row("head.bias", "vocab_projector.bias")]


def dims(config) -> Dims:
    return Dims(config.n_layers, config.n_heads, config.dim, config.hidden_dim, config.activation,
                norm="post-layernorm")




def random_inputs(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    length = min(config.max_position_embeddings, 16)
    return {"input_ids": torch.randint(0, config.vocab_size, (n, length), generator=generator)}


def check_config(config) -> None:
    if getattr(config, "sinusoidal_pos_embds", False):
        raise ModelLoadError("unsupported distilbert layout: sinusoidal_pos_embds=True (fixed sinusoidal positions are "
                             "written by transformers' initialisation, not weights a residual permutation may move)")
    if config.dim % config.n_heads:
        raise ModelLoadError(f"unsupported distilbert layout: width {config.dim} is not divisible by its "
                             f"{config.n_heads} heads")


def tiny_config(*, layers: int = 2, width: int = 32, heads: int = 4, mlp: int | None = None, activation: str = "gelu",
                tied: bool = True, vocab: int = 61, context: int = 32, **other_families_options):
    from transformers import DistilBertConfig

    return DistilBertConfig(n_layers=layers, dim=width, n_heads=heads, hidden_dim=mlp or 4 * width,
                            activation=activation, vocab_size=vocab, max_position_embeddings=context,
                            tie_word_embeddings=tied, dropout=0.0, attention_dropout=0.0, pad_token_id=0,
                            architectures=["DistilBertForMaskedLM"])


def test_configs(rng, n: int) -> list:
    """Post-LN encoders: tied or untied decoder, GELU or ReLU."""
    out = []
    for _ in range(n):
        heads = rng.choice([1, 2, 4])
        out.append(tiny_config(layers=rng.choice([1, 2, 3]), width=heads * rng.choice([4, 8]), heads=heads,
                               mlp=rng.choice([16, 24]), activation=rng.choice(["gelu", "relu"]),
                               tied=rng.random() < 0.5))
    return out


LAYER = "distilbert.transformer.layer.{i}."
DISTILBERT = Family(
    name="distilbert",
    model_type="distilbert",
    hf_class_name="DistilBertForMaskedLM",
    outer_tags=OUTER,
    dims=dims,
    weight_map=lambda config: ROWS,
    title="DistilBERT",
    canonical_config=canonical_config,
    random_inputs=random_inputs,
    check_config=check_config,
    # the residual streams after each sublayer's norm (Verma's relabelling reads them): the norms here are
    # modules of their own, not inside the sublayer as BERT's are
    hook_points={"mlp": LAYER + "ffn.lin2", "heads": LAYER + "attention.out_lin", "q": LAYER + "attention.q_lin",
                 "k": LAYER + "attention.k_lin", "heads_stream": LAYER + "sa_layer_norm",
                 "mlp_stream": LAYER + "output_layer_norm"},
    block=BLOCK,
    norm_readers={},
    final_norm={},
    task="masked-lm",
    context=lambda config: config.max_position_embeddings,
    tiny=tiny_config,
    test_configs=test_configs,
)
