"""Task loss and accuracy of a model family on a data source, for any parameter values.

One Hugging Face module is built per evaluator and reused through torch.func.functional_call,
so a 21-point interpolation curve never rebuilds a module or copies weights into one."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.func import functional_call

from symalign.data.base import IGNORE
from symalign.models.family import Family, Tensors, TransformerModel


@dataclass(frozen=True)
class Metrics:
    loss: float
    accuracy: float
    examples: int


def batch_loss(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed cross-entropy and number of correct predictions (next token, class, or masked token;
    targets of IGNORE (-100) are not scored: `scored` counts the rest)."""
    flat = logits.reshape(-1, logits.shape[-1]).float()
    y = targets.reshape(-1)
    return (torch.nn.functional.cross_entropy(flat, y, reduction="sum", ignore_index=IGNORE),
            ((flat.argmax(-1) == y) & (y != IGNORE)).sum())


def scored(targets: torch.Tensor) -> int:
    """How many targets a loss sums over (all but the ignored ones)."""
    return int((targets != IGNORE).sum())


def module_names(module: torch.nn.Module) -> set[str]:
    """The names functional_call takes for this module: a tied parameter (a BERT decoder that is the
    token embedding) answers to one name only, and passing both raises."""
    return {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}


def functional_params(family: Family, config, tensors: Tensors, names: set[str]) -> dict[str, torch.Tensor]:
    """Logical `tensors` as the Hugging Face parameters functional_call takes for a module with
    these `names` (module_names)."""
    return {k: v for k, v in family.from_logical(tensors, config).items() if k in names}


class Evaluator:
    """Evaluate parameter dictionaries (Hugging Face names) on fixed batches of a data source."""

    def __init__(self, template: TransformerModel, data, max_examples: int | None = None,
                 device: torch.device | str = "cpu"):
        data.check_model(template)
        self.device = torch.device(device)
        self.family = template.family
        self.config = template.config
        self.module = template.to_module().to(self.device)
        self.names = module_names(self.module)
        self.batches = [({k: v.to(self.device) for k, v in x.items()}, y.to(self.device))
                        for x, y in data.eval_batches(template, max_examples)]
        self.examples = sum(len(y) for _, y in self.batches)

    def hf_params(self, model: TransformerModel) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in functional_params(self.family, self.config, model.tensors,
                                                                         self.names).items()}

    @torch.no_grad()
    def __call__(self, params: dict[str, torch.Tensor]) -> Metrics:
        total, correct, count = 0.0, 0, 0
        for inputs, y in self.batches:
            logits = functional_call(self.module, params, args=(), kwargs=inputs).logits
            if self.family.task == "causal-lm":
                logits = logits[:, : y.shape[1]]
            loss, right = batch_loss(logits, y)
            total += float(loss)
            correct += int(right)
            count += scored(y)
        return Metrics(total / count, correct / count, self.examples)


def evaluate(model: TransformerModel, data, max_examples: int | None = None, device: str = "cpu") -> Metrics:
    """Loss and accuracy of one model on the evaluation split."""
    ev = Evaluator(model, data, max_examples, device)
    return ev(ev.hf_params(model))
