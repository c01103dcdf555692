"""Curved low-loss paths between two models (Garipov et al. 2018; Draxler et al. 2018).

Mode connectivity's first finding: two trained networks are joined by a *curved* path of nearly
constant loss, even where the straight line between them has a barrier. Linear mode connectivity
is the stronger claim that, once symmetries are factored out, the straight line is enough. Both
paths are fitted here in the canonical parametrisation, so they sit beside symalign's straight
lines and alignments:

- bezier:    θ(t) = (1−t)²·θ_A + 2t(1−t)·θ_C + t²·θ_B
- polychain: θ(t) = θ_A + 2t·(θ_C − θ_A) for t ≤ ½, θ_C + (2t−1)·(θ_B − θ_C) after

Only the bend θ_C is trained, as Garipov et al. train it: the expected loss over t ~ U(0, 1),
a fresh t for every batch, starting from the midpoint (the straight line). At t = 0 and t = 1
the curve is A and B exactly (their coefficients are 1 and 0)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.func import functional_call

from symalign.errors import SymalignError
from symalign.landscape.curve_options import BENDS, CurveOptions
from symalign.landscape.evaluate import Evaluator, batch_loss, scored
from symalign.landscape.interpolation import Curve, barriers, check_points
from symalign.models.canonical import canonicalize, norm_parameters
from symalign.models.family import Tensors, TransformerModel
from symalign.models.functional import functional_params, module_names, weightless_module

Progress = Callable[[int, int], None]


def coefficients(bend: str, t: float) -> tuple[float, float, float]:
    """(c_A, c_C, c_B) with θ(t) = c_A·θ_A + c_C·θ_C + c_B·θ_B."""
    if bend == "bezier":
        return (1 - t) ** 2, 2 * t * (1 - t), t ** 2
    if bend == "polychain":
        return (1 - 2 * t, 2 * t, 0.0) if t <= 0.5 else (0.0, 2 - 2 * t, 2 * t - 1)
    raise SymalignError(f"unknown --bend {bend!r}; choose {' or '.join(BENDS)}")


def point_on(bend: str, a: Tensors, control: Tensors, b: Tensors, t: float) -> Tensors:
    """θ(t) on the curve. At t = 0 and 1 the endpoint itself (exactly, not a sum that rounds)."""
    if t == 0.0:
        return dict(a)
    if t == 1.0:
        return dict(b)
    ca, cc, cb = coefficients(bend, t)
    return {k: ca * a[k] + cc * control[k] + cb * b[k] for k in a}


def midpoint(a: Tensors, b: Tensors) -> Tensors:
    """The bend that makes either curve the straight line (its start)."""
    return {k: 0.5 * (a[k] + b[k]) for k in a}


@dataclass
class FittedCurve:
    """The bend, how the fit went, and the path's loss along t."""

    bend: str
    control: Tensors
    history: list[dict]
    seconds: float
    curve: Curve | None = None  # loss and accuracy along t (evaluation data)
    extra: dict = field(default_factory=dict)


class _PathLoss:
    """The task loss at θ(t) on a batch, differentiable in the bend (one weightless module, parameters
    passed functionally, as learned matching's objective does)."""

    def __init__(self, template: TransformerModel, device: torch.device):
        self.template, self.device = template, device
        self.module = weightless_module(template).to(device)
        self.names = module_names(self.module)

    def __call__(self, tensors: Tensors, inputs: dict, y: torch.Tensor) -> torch.Tensor:
        params = functional_params(self.template.family, self.template.config, tensors, self.names)
        logits = functional_call(self.module, params, args=(), kwargs={k: v.to(self.device) for k, v in inputs.items()})
        logits = logits.logits
        y = y.to(self.device)
        total, _ = batch_loss(logits[:, : y.shape[1]] if y.dim() == 2 else logits, y)
        return total / max(scored(y), 1)


def fit_bend(a: TransformerModel, b: TransformerModel, data, options: CurveOptions | None = None,
             device: torch.device | str = "cpu", progress: Progress | None = None) -> FittedCurve:
    """Train the bend of a curve from A to B (canonical forms: B as it is, or aligned to A) by Adam on
    the loss at θ(t), t ~ U(0, 1) fresh for each batch. The bend is returned in canonical form, for
    A's and B's canonical forms (what `point_on` and `model_at` combine)."""
    options = options or CurveOptions()
    options.check()
    data.check_model(a)
    a, b = canonicalize(a), canonicalize(b)  # as they come from curve_run; a raw pair is brought there first
    device = torch.device(device)
    ta = {k: v.to(device, torch.float32) for k, v in a.tensors.items()}
    tb = {k: v.to(device, torch.float32) for k, v in b.tensors.items()}
    fixed = norm_parameters(a)  # γ = 1, β ∈ {0, 1} at both ends: the bend keeps them (the curve stays canonical)
    control = {k: v if k in fixed else v.clone().requires_grad_(True) for k, v in midpoint(ta, tb).items()}
    loss_at = _PathLoss(a, device)
    optimizer = torch.optim.Adam([v for k, v in control.items() if k not in fixed], lr=options.lr)
    generator = torch.Generator().manual_seed(options.seed)
    history: list[dict] = []
    begin = time.perf_counter()
    for step in range(1, options.steps + 1):
        for group in optimizer.param_groups:  # cosine decay to zero: the bend settles at the end
            group["lr"] = options.lr * 0.5 * (1 + math.cos(math.pi * (step - 1) / options.steps))
        t = float(torch.rand((), generator=generator))
        inputs, y = data.train_batch(a, options.batch_size, generator)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_at(point_on(options.bend, ta, control, tb, t), inputs, y)
        if not torch.isfinite(loss):
            raise SymalignError(f"the curve fit diverged at step {step}; lower the learning rate (--lr)")
        loss.backward()
        optimizer.step()
        history.append({"step": step, "t": round(t, 6), "loss": loss.item()})
        if progress:
            progress(step, options.steps)
    # Adam's steps are not mean-free along the residual, though the gradients are: the bend is projected
    # into canonical form, which changes no point's function (the norms are fixed, so every point's
    # readers see mean-free inputs) and puts the curve in the plane of canonical A, B and the bend.
    bend = canonicalize(a.with_tensors({k: v.detach().to(a.tensors[k].dtype).cpu() for k, v in control.items()}))
    return FittedCurve(options.bend, dict(bend.tensors), history, time.perf_counter() - begin)


def model_at(bend: str, a: TransformerModel, control: Tensors, b: TransformerModel, t: float) -> TransformerModel:
    """The model at t on the curve: a loadable checkpoint like any other (same family and config as A)."""
    if not 0.0 <= t <= 1.0:
        raise SymalignError(f"t must lie in [0, 1]; got {t}")
    return a.with_tensors(point_on(bend, a.tensors, control, b.tensors, t))


def curve_loss(bend: str, a: TransformerModel, control: Tensors, b: TransformerModel, data, points: int = 21,
               max_examples: int | None = None, device: torch.device | str = "cpu",
               progress: Progress | None = None) -> Curve:
    """Loss and accuracy at `points` evenly spaced t, and the barrier of the curve measured as the
    straight line's is (above the line between the endpoint losses), so the two compare directly."""
    check_points(points)
    evaluator = Evaluator(a, data, max_examples, device)
    ts = [i / (points - 1) for i in range(points)]
    losses, accs = [], []
    for i, t in enumerate(ts):
        m = evaluator(evaluator.hf_params(model_at(bend, a, control, b, t)))
        if not math.isfinite(m.loss):
            raise SymalignError(f"the loss is not finite at t = {t:.2f} on the curve")
        losses.append(m.loss)
        accs.append(m.accuracy)
        if progress:
            progress(i + 1, points)
    primary, mean = barriers(ts, losses)
    return Curve(ts, losses, accs, primary, mean, [losses[0], losses[-1]], [accs[0], accs[-1]], evaluator.examples,
                 "canonical", extra={"path": bend})
