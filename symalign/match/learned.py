"""Learned matching (Theus et al.): optimise the transform for low loss *between* the models.

Starting from weight matching (the start matters), each component gets latent parameters that
are projected to its group in the forward pass:
- orthogonal: G = G₀ · exp(S − Sᵀ) (on the residual, inside the complement of 1, so Q·1 = 1);
- invertible: G = G₀ · (I + M); rescale: a = a₀ · e^s;
- permutation: latent Z (initialised at the one-hot P₀); the forward uses the assignment
  P = LAP(Z) with a straight-through gradient to Z;
- scaled permutations stay at their weight-matching value.
The objective is the task loss of θ(λ) = (1−λ)θ_A + λ·T(θ_B) on training batches, with λ drawn
each step (default U(0.4, 0.6)), so the optimiser flattens the middle of the path."""

from __future__ import annotations

import math
import time
from typing import Callable

import torch
from torch.func import functional_call

from symalign.errors import SymalignError
from symalign.landscape.evaluate import batch_loss
from symalign.match.solvers import assignment
from symalign.models.family import TransformerModel
from symalign.symmetry.groups import Dense, GroupElement, Permutation
from symalign.symmetry.random import ones_complement_basis
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked

Progress = Callable[[int, int], None]
LAMBDA_SAMPLERS = ("uniform_mid", "half", "uniform", "normal")


def sample_lambda(kind: str, generator: torch.Generator) -> float:
    u = float(torch.rand((), generator=generator))
    if kind == "uniform_mid":
        return 0.4 + 0.2 * u
    if kind == "half":
        return 0.5
    if kind == "uniform":
        return u
    if kind == "normal":
        return min(1.0, max(0.0, 0.5 + 0.1 * float(torch.randn((), generator=generator))))
    raise SymalignError(f"unknown λ distribution {kind!r}; choose from {', '.join(LAMBDA_SAMPLERS)}")


def sinkhorn(log_p: torch.Tensor, iterations: int = 20) -> torch.Tensor:
    """Sinkhorn(exp(Z)): alternate row and column normalisation in the log domain."""
    for _ in range(iterations):
        log_p = log_p - torch.logsumexp(log_p, dim=1, keepdim=True)
        log_p = log_p - torch.logsumexp(log_p, dim=0, keepdim=True)
    return log_p.exp()


def _skew(p: torch.Tensor) -> torch.Tensor:
    return p - p.mT


class LatentElement(torch.nn.Module):
    """One space's trainable element around its starting value."""

    def __init__(self, start: GroupElement, cls: str, residual: bool, soft: bool = False,
                 generator: torch.Generator | None = None):
        super().__init__()
        self.cls, self.residual, self.start, self.soft = cls, residual, start, soft
        m = start.dense()
        self.g0 = torch.nn.Parameter(m, requires_grad=False)
        if cls == "orthogonal":
            n = m.shape[-1] - 1 if residual else m.shape[-1]
            self.p = torch.nn.Parameter(torch.zeros(*m.shape[:-2], n, n, dtype=torch.float64))
            if residual:
                self.register_buffer("basis", ones_complement_basis(m.shape[-1]))
        elif cls == "invertible":
            self.p = torch.nn.Parameter(torch.zeros_like(m))
        elif cls == "rescale":
            self.p = torch.nn.Parameter(torch.zeros(m.shape[0], dtype=torch.float64))
        elif cls == "perm" and isinstance(start, Permutation) and soft:
            noise = 0.01 * torch.rand(m.shape, generator=generator, dtype=torch.float64)
            self.p = torch.nn.Parameter(torch.log(m + noise))
        elif cls == "perm" and isinstance(start, Permutation):
            self.p = torch.nn.Parameter(m.clone())
        else:  # fixed: scaled permutations, per-head permutations
            self.p = None

    def element(self) -> GroupElement:
        if self.p is None:
            return self.start
        if self.cls == "orthogonal":
            r = torch.linalg.matrix_exp(_skew(self.p))
            if self.residual:
                one = torch.ones(1, 1, dtype=torch.float64)
                r = self.basis @ torch.block_diag(one, r) @ self.basis.T
            return Dense(self.g0 @ r, "orthogonal")
        if self.cls == "invertible":
            return Dense(self.g0 @ (torch.eye(self.g0.shape[-1], dtype=torch.float64) + self.p), "invertible")
        if self.cls == "rescale":
            return Dense(self.g0 * torch.exp(self.p)[:, None, None], "rescale")
        if self.soft:
            return Dense(sinkhorn(self.p), "perm")  # a doubly stochastic relaxation, used on both sides
        hard = torch.eye(self.p.shape[0], dtype=torch.float64)[assignment(self.p.detach())]
        return Dense(hard + self.p - self.p.detach(), "perm")  # straight-through estimator

    def final(self) -> GroupElement:
        """The element with the latent projected exactly onto the group (no gradient parts)."""
        with torch.no_grad():
            if self.p is None:
                return self.start
            if self.cls == "perm":
                return Permutation(assignment(self.p))
            el = self.element()
            return Dense(el.matrix.detach().clone(), el.kind)


def learned_match(a: TransformerModel, b: TransformerModel, spec: SymmetrySpec, start: Transform,
                  classes: dict[str, str], data, steps: int = 300, lr: float = 0.01, perm_lr: float = 0.1,
                  batch_size: int = 64, lambdas: str = "uniform_mid", seed: int = 0,
                  device: torch.device | str = "cpu", progress: Progress | None = None,
                  soft: bool = False) -> tuple[Transform, list[dict]]:
    """Refine `start` (weight matching) by gradient descent on the loss along the path; with
    `soft`, permutations are relaxed to Sinkhorn matrices during training (Theus et al.'s soft variant)."""
    device = torch.device(device)
    data.check_model(a)
    generator = torch.Generator().manual_seed(seed)
    latents = {name: LatentElement(el, classes[spec.spaces[name].kind], spec.spaces[name].kind == "residual",
                                   soft, generator).to(device)
               for name, el in start.items()}
    groups = [{"params": [l.p for l in latents.values() if l.p is not None and l.cls != "perm"], "lr": lr},
              {"params": [l.p for l in latents.values() if l.p is not None and l.cls == "perm"], "lr": perm_lr}]
    groups = [g for g in groups if g["params"]]
    if not groups:
        return start, []
    optimizer = torch.optim.Adam(groups)
    module = a.to_module().to(device)
    ta = {k: v.to(device) for k, v in a.tensors.items()}
    tb = {k: v.to(device) for k, v in b.tensors.items()}
    history, begin = [], time.perf_counter()
    for step in range(steps):
        transform = Transform({name: latent.element() for name, latent in latents.items()})
        moved = apply_unchecked(tb, spec, transform)
        lam = sample_lambda(lambdas, generator)
        mixed = {k: (1 - lam) * ta[k] + lam * moved[k] for k in ta}
        inputs, y = data.train_batch(a, batch_size, generator)
        params = a.family.from_logical(mixed, a.config)
        logits = functional_call(module, params, args=(), kwargs={k: v.to(device) for k, v in inputs.items()}).logits
        loss_sum, _ = batch_loss(logits[:, : y.shape[1]] if y.dim() == 2 else logits, y.to(device))
        loss = loss_sum / y.numel()
        if not math.isfinite(loss.item()):
            raise SymalignError(f"learned matching diverged at step {step}; lower the learning rate")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.append({"step": step + 1, "lambda": lam, "loss": loss.item(), "seconds": time.perf_counter() - begin})
        if progress:
            progress(step + 1, steps)
    return Transform({name: latent.final() for name, latent in latents.items()}), history
