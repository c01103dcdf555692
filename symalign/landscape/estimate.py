"""How long a curve will take, before it runs: one evaluation batch timed on the real model
(what the app shows next to the run button, so a 124M-parameter checkpoint on a CPU is not a
silent ten-minute wait)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from symalign.landscape.evaluate import Evaluator
from symalign.models import canonicalize
from symalign.models.family import TransformerModel


@dataclass(frozen=True)
class CurveEstimate:
    seconds_per_point: float
    examples: int
    batches: int

    def seconds(self, points: int) -> float:
        return self.seconds_per_point * points


def curve_estimate(model: TransformerModel, data, max_examples: int | None = None,
                   device: str | torch.device = "cpu") -> CurveEstimate:
    """Time one batch of the evaluation a curve repeats at every λ (in canonical form, as the curve)."""
    model = canonicalize(model)
    evaluator = Evaluator(model, data, max_examples, device)
    params = evaluator.hf_params(model)
    probe = evaluator.batches[:1]
    begin = time.perf_counter()
    evaluator.evaluate_batches(params, probe)
    per_batch = time.perf_counter() - begin
    return CurveEstimate(per_batch * len(evaluator.batches), evaluator.examples, len(evaluator.batches))


def readable(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
