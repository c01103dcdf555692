"""Pseudo-perplexity of a masked language model (Salazar et al. 2020), every position masked in turn.

Why a second metric beside the masked loss: a masked LM has no likelihood of a sentence, and its
15%-masked loss depends on which positions were drawn. The pseudo-log-likelihood masks every
position in turn and scores it from all the others, PLL(W) = Σ_t log P(w_t | W without t), and the
pseudo-perplexity is exp(−PLL / number of scored tokens) over the windows scored. It is not
Verma & Elbayad's measure: their Tables 1-3 are loss barriers against the endpoints' average at 15%
masking (their eq. 10), and their Fig. 3 plots their eq. 11, 2^(−mean log2 p) over the 15% masked
tokens, i.e. exp of the masked loss; this score is a steadier one beside them, under its own name.

Cost: a window of L tokens takes L forward passes (L copies, each with one position masked); the
first `windows` windows of the evaluation split are scored (64 by default: 2,048 tokens for the
zoo's BERT), the same windows at every λ."""

from __future__ import annotations

import math

import torch
from torch.func import functional_call

from symalign.data.text import TextData, model_tokenizer
from symalign.models.family import TransformerModel

DEFAULT_WINDOWS = 64
SEQUENCES_PER_FORWARD = 1024  # masked copies per forward pass (the zoo's BERT: 1,024 × 32 tokens)


def scores_pseudo_perplexity(model: TransformerModel, data) -> bool:
    """Whether `data` scores `model` as a masked LM (the only case the metric is defined for)."""
    task_for = getattr(data, "task_for", None)
    return model.family.task == "masked-lm" and task_for is not None and task_for(model) == "masked-lm"


def unmasked_windows(model: TransformerModel, data, windows: int = DEFAULT_WINDOWS) -> torch.Tensor:
    """[n, L] token windows from the start of the evaluation split, nothing masked (TextData's own windows)."""
    return torch.cat([x["input_ids"] for x, _ in TextData.eval_batches(data, model, windows)])


def masked_copies(window: torch.Tensor, mask_id: int) -> torch.Tensor:
    """[L, L]: copy t of the window with position t replaced by the mask token."""
    copies = window.repeat(len(window), 1)
    copies.fill_diagonal_(mask_id)
    return copies


class PseudoPerplexity:
    """Score parameter dictionaries (Hugging Face names, as an Evaluator builds them) by pseudo-perplexity."""

    def __init__(self, module: torch.nn.Module, template: TransformerModel, data, windows: int = DEFAULT_WINDOWS,
                 device: torch.device | str = "cpu"):
        self.module = module
        self.device = torch.device(device)
        self.windows = unmasked_windows(template, data, windows)
        self.mask_id = int(model_tokenizer(template.source).mask_token_id)

    @property
    def tokens(self) -> int:
        return self.windows.numel()

    @torch.no_grad()
    def log_likelihood(self, params: dict[str, torch.Tensor]) -> float:
        """Σ over the windows' tokens of log P(token | its window with that token masked), in float64."""
        n, length = self.windows.shape
        per_forward = max(1, SEQUENCES_PER_FORWARD // length)  # windows per forward pass
        total = 0.0
        for i in range(0, n, per_forward):
            chunk = self.windows[i: i + per_forward]
            copies = torch.cat([masked_copies(w, self.mask_id) for w in chunk]).to(self.device)
            logits = functional_call(self.module, params, args=(), kwargs={"input_ids": copies}).logits
            rows = torch.arange(len(copies), device=self.device)
            positions = rows % length
            picked = logits[rows, positions].double().log_softmax(-1)  # each copy's masked position
            total += float(picked[rows, chunk.reshape(-1).to(self.device)].sum())
        return total

    def __call__(self, params: dict[str, torch.Tensor]) -> float:
        return math.exp(-self.log_likelihood(params) / self.tokens)
