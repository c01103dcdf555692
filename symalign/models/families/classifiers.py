"""Sequence classifiers: BERT, RoBERTa, GPT-2 and Llama with a classification head instead of their
language-model head (`*ForSequenceClassification`). The body is the language model's, so each is its
language model's family with another head:

- BERT: the pooler (a dense map of the [CLS] state, tanh) and the classifier; RoBERTa: its
  classification head's dense map of the <s> state and its output projection. The pooler's and the
  dense map's inputs are the residual stream (tagged so: a residual permutation reaches them); their
  outputs and the classifier belong to no symmetry (none is declared there, so none is used).
- GPT-2 and Llama: `score`, a bias-free map of the last non-padding token's final state to the
  labels: the LM head's place and tags, so the canonical form folds the final norm into it as it
  does into an LM head. Their config must name a `pad_token_id` (how the last token is found).

A classifier's function check runs on its logits (one row of label scores per sequence)."""

from __future__ import annotations

from dataclasses import replace

from symalign.errors import ModelLoadError
from symalign.models.families import bert, gpt2, llama
from symalign.models.family import Family, Tensors, untied_config
from symalign.models.weight_map import Row, adapters

TASK = "sequence-classification"

BERT_HEAD = {  # the encoder's embeddings stay as in OUTER; the MLM head is replaced by these
    "head.pooler.weight": (None, "residual:contra"),
    "head.pooler.bias": (None,),
    "head.weight": (None, None),
    "head.bias": (None,),
}
ENCODER_HEADS = {  # logical name -> Hugging Face name
    "bert": {"head.pooler": "bert.pooler.dense", "head": "classifier"},
    "roberta": {"head.pooler": "classifier.dense", "head": "classifier.out_proj"},
}


def encoder_classifier_rows(kind: str) -> list[Row]:
    """The encoder's weight map with the classification head instead of the masked-LM one."""
    return bert.encoder_rows(bert.NAMES[kind]["prefix"]) + [
        Row(f"{logical}.{part}", f"{hf}.{part}") for logical, hf in ENCODER_HEADS[kind].items()
        for part in ("weight", "bias")]


def as_classifier(config, hf_class_name: str, labels: int, names: tuple[str, ...] | None = None):
    """`config` (changed in place) as a classifier of `labels` classes, named by `names` when given: the
    small configs here and a fine-tune that puts a new head on a language model (symalign.train.loop)."""
    config.architectures = [hf_class_name]
    config.num_labels = labels
    config.tie_word_embeddings = False  # nothing to tie: the head maps to labels, not tokens
    if names:
        config.id2label = dict(enumerate(names))
        config.label2id = {name: i for i, name in enumerate(names)}
    if getattr(config, "pad_token_id", None) is None:  # decoders find the last token by it
        config.pad_token_id = 0
    return config


def _small(base: Family, hf_class_name: str) -> dict:
    """`tiny` and `test_configs` for the classifier: the base family's small configs (its varied ones
    included) with a classification head of 2 labels (varied: 2, 3 or 5)."""
    def tiny(*, labels: int = 2, **options):
        return as_classifier(base.tiny(**options), hf_class_name, labels)

    def test_configs(rng, n: int) -> list:
        return [as_classifier(c, hf_class_name, rng.choice([2, 3, 5])) for c in base.test_configs(rng, n)]

    return {"tiny": tiny, "test_configs": test_configs}


def encoder_classifier(base: Family, hf_class_name: str) -> Family:
    rows = encoder_classifier_rows(base.model_type)
    to_logical, from_logical = adapters(lambda config: rows, base.dims)
    outer = {k: v for k, v in base.outer_tags.items() if not k.startswith("head.")} | BERT_HEAD
    return replace(base, name=f"{base.name}-classifier", hf_class_name=hf_class_name, outer_tags=outer,
                   to_logical=to_logical, from_logical=from_logical, weight_map=lambda config: rows, task=TASK,
                   variant="classifier", **_small(base, hf_class_name))


def decoder_classifier(base: Family, hf_class_name: str, lm_head: str = "lm_head.weight") -> Family:
    """GPT-2 or Llama with `score` where the LM head was (never tied to the embedding)."""
    def to_logical(sd: Tensors, config) -> Tensors:
        return base.to_logical({**sd, lm_head: sd["score.weight"]}, config)

    def from_logical(t: Tensors, config) -> Tensors:
        sd = base.from_logical(t, untied_config(config))
        sd["score.weight"] = sd.pop(lm_head)
        return sd

    def check_config(config) -> None:
        base.check_config(config)
        if getattr(config, "pad_token_id", None) is None:
            raise ModelLoadError(f"this {hf_class_name} names no pad_token_id in its config: it is how the model "
                                 "finds each sequence's last token (set it, e.g. to the end-of-text token)")

    return replace(base, name=f"{base.name}-classifier", hf_class_name=hf_class_name, to_logical=to_logical,
                   from_logical=from_logical, check_config=check_config, task=TASK, variant="classifier",
                   weight_map=lambda config: [r if r.hf != lm_head else Row(r.logical, "score.weight")
                                              for r in base.weight_map(config)],
                   **_small(base, hf_class_name))


BERT_CLASSIFIER = encoder_classifier(bert.BERT, "BertForSequenceClassification")
ROBERTA_CLASSIFIER = encoder_classifier(bert.ROBERTA, "RobertaForSequenceClassification")
GPT2_CLASSIFIER = decoder_classifier(gpt2.GPT2, "GPT2ForSequenceClassification")
LLAMA_CLASSIFIER = decoder_classifier(llama.LLAMA, "LlamaForSequenceClassification")
