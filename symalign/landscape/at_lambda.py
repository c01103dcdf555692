"""The model at λ on the straight path, at work: what a student sees when the loss curve rises.

θ(λ) = (1 − λ)·θ_A + λ·θ_B (both in one basis). Shown as the task shows best: a greedy continuation
of a prompt for a causal LM, the top predictions for a masked position for a masked LM, the
predicted class with its probabilities for an image or a sentence. Greedy and fixed examples, so
the same λ always shows the same thing (the seminar's "gibberish before alignment, sense after"
is one drag of the slider, and it does not flicker)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from transformers import GenerationConfig

from symalign.data.text import model_tokenizer
from symalign.errors import SymalignError
from symalign.models import outputs
from symalign.models.family import TransformerModel


@dataclass
class AtWork:
    task: str  # causal-lm | masked-lm | image-classification | sequence-classification
    shown: str  # the prompt (with the continuation), the masked text, or the sentence / "image k"
    top: list[tuple[str, float]] = field(default_factory=list)  # predictions with probabilities
    continuation: str = ""  # causal LMs: the generated text after the prompt
    image: torch.Tensor | None = None  # image classifiers: the example's pixels [C, H, W], scaled to [0, 1]
    truth: str | None = None  # classifiers: the example's true label, so a student sees right from wrong


def point_on_curve(curve: dict, lam: float) -> tuple[float, float, float | None]:
    """(λ, loss, accuracy) at the curve's measured point nearest `lam`: what the panel reports beside the
    model at λ (the curve is measured on the whole evaluation split, not on the one example shown)."""
    i = min(range(len(curve["lambdas"])), key=lambda k: abs(curve["lambdas"][k] - lam))
    accuracy = curve.get("accuracy") or []
    return curve["lambdas"][i], curve["loss"][i], accuracy[i] if i < len(accuracy) else None


def blend(a: TransformerModel, b: TransformerModel, lam: float) -> TransformerModel:
    """θ(λ) = (1 − λ)·θ_A + λ·θ_B, with A's config and tokenizer."""
    if not 0.0 <= lam <= 1.0:
        raise SymalignError(f"λ must be in [0, 1]; got {lam}")
    return a.with_tensors({k: torch.lerp(a.tensors[k].float(), b.tensors[k].float(), lam) for k in a.tensors})


@torch.no_grad()
def at_work(model: TransformerModel, prompt: str = "", data=None, example: int = 0, tokens: int = 60,
            top: int = 5) -> AtWork:
    """What `model` does with `prompt` (text models) or with evaluation example `example` of `data`
    (classifiers). A masked LM predicts the first mask token in the prompt (written `_` or the
    tokenizer's own mask token)."""
    task = model.family.task
    if task in ("image-classification", "sequence-classification"):
        return _classify(model, data, example, top)
    tokenizer = model_tokenizer(model.source)
    if task == "masked-lm":
        return _unmask(model, tokenizer, prompt, top)
    return _continue(model, tokenizer, prompt, tokens)


def _continue(model: TransformerModel, tokenizer, prompt: str, tokens: int) -> AtWork:
    """Greedy continuation within the model's context."""
    context = model.family.context(model.config)
    ids = tokenizer(prompt or "\n", return_tensors="pt")["input_ids"][0].tolist()
    if not ids:
        raise SymalignError("the prompt has no token this model's tokenizer knows")
    start = len(ids)
    ids = greedy_ids(model.to_module(), ids, tokens, context, tokenizer.pad_token_id)
    continuation = tokenizer.decode(ids[start:])
    return AtWork("causal-lm", prompt + continuation, continuation=continuation)


def greedy_ids(module, ids: list[int], tokens: int, context: int, pad: int | None = None) -> list[int]:
    """`ids` and `tokens` more, each the argmax of the model's next-token logits (no end-of-text stop)."""
    with torch.inference_mode():
        if len(ids) + tokens <= context:  # transformers' greedy generate with its key/value cache: about 3x
            # faster than a full pass per token (issue #56: the λ panel's update time). No end-of-text token:
            # suppressing it with min_new_tokens instead would pick the second-best token where it is the argmax
            config = GenerationConfig(max_new_tokens=tokens, do_sample=False, eos_token_id=[],  # [] (not None): no stop
                                      pad_token_id=pad if pad is not None else 0)
            prompt = torch.tensor([ids])
            return module.generate(prompt, attention_mask=torch.ones_like(prompt), generation_config=config)[0].tolist()
        ids = list(ids)
        for _ in range(tokens):  # past the context: a sliding window, recomputed per token
            ids.append(int(module(input_ids=torch.tensor([ids[-context:]])).logits[0, -1].argmax()))
        return ids


def _unmask(model: TransformerModel, tokenizer, prompt: str, top: int) -> AtWork:
    mask = tokenizer.mask_token
    if mask is None:
        raise SymalignError("this masked language model's tokenizer has no mask token")
    text = prompt.replace("_", mask, 1) if mask not in prompt else prompt
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    where = (ids[0] == tokenizer.mask_token_id).nonzero()
    if len(where) == 0:
        raise SymalignError("put a _ (or the mask token) where the model should fill in")
    position = int(where[0])
    probs = outputs(model, {"input_ids": ids})[0, position].float().softmax(-1)
    values, indices = probs.topk(min(top, probs.numel()))
    return AtWork("masked-lm", text, [(tokenizer.decode([int(i)]), float(v)) for v, i in zip(values, indices)])


def _classify(model: TransformerModel, data, example: int, top: int) -> AtWork:
    if data is None:
        raise SymalignError("a classifier is shown on an example of its data: pass the data")
    seen = 0
    for inputs, labels in data.eval_batches(model, example + 1):
        if example < seen + len(labels):
            row = {k: v[example - seen: example - seen + 1] for k, v in inputs.items()}
            label = int(labels[example - seen])
            break
        seen += len(labels)
    else:
        raise SymalignError(f"the evaluation split has no example {example}")
    probs = outputs(model, row)[0].float().softmax(-1)
    values, indices = probs.topk(min(top, probs.numel()))
    names = getattr(model.config, "id2label", None) or {}
    predictions = [(str(names.get(int(i), int(i))), float(v)) for v, i in zip(values, indices)]
    truth = str(names.get(label, label))
    if "input_ids" in row:
        text = model_tokenizer(model.source).decode(row["input_ids"][0], skip_special_tokens=True)
        return AtWork(model.family.task, text, predictions, truth=truth)
    pixels = row["pixel_values"][0].float()
    pixels = (pixels - pixels.min()) / (pixels.max() - pixels.min()).clamp_min(1e-12)
    return AtWork(model.family.task, f"evaluation image {example}", predictions, image=pixels, truth=truth)
