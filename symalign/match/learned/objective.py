"""Learned matching's objective: the task loss of θ(w) = Σ w_i T_i(θ_i), the models mixed under their
transforms, differentiable in the transforms, on a batch (in micro-batches when a real vocabulary's
logits would not fit), and the fixed check that keeps the best state."""

from __future__ import annotations

import itertools
from dataclasses import fields, replace

import numpy as np
import torch
from torch.func import functional_call

from symalign.errors import SymalignError
from symalign.landscape.evaluate import activation_budget, batch_loss, examples_per_chunk, scored
from symalign.match.learned.options import LAMBDA_SAMPLERS
from symalign.match.matchers import declared_default
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models.family import TransformerModel
from symalign.models.functional import functional_params, module_names, weightless_module
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked


class PathObjective:
    """The loss at mixing weights w of models[1:] under their transforms and models[0] as it is."""

    def __init__(self, models: list[TransformerModel], spec: SymmetrySpec, device: torch.device):
        self.ref, self.spec, self.device = models[0], spec, device
        self.module = weightless_module(self.ref).to(device)
        self.names = module_names(self.module)
        self.tensors = [{k: v.to(device) for k, v in m.tensors.items()} for m in models]
        self.budget = activation_budget(self.ref, device)  # once, with the models in place
        # the zoo keeps its layout
        self.large = sum(t.numel() for t in self.ref.tensors.values()) > LARGE_MODEL_PARAMETERS

    def mixed_params(self, weights: list[float], transforms: list[Transform]) -> dict[str, torch.Tensor]:
        """θ(w) = Σ w_i T_i(θ_i) as the Hugging Face parameters (differentiable in the transforms)."""
        tensors = self.tensors
        moved = [apply_unchecked(t, self.spec, tr) for t, tr in zip(tensors[1:], transforms)]
        mixed = {}
        for k in tensors[0]:
            terms = [m.pop(k) for m in moved]  # each moved tensor is let go as soon as it is summed
            first = terms[0]
            if first.untyped_storage().data_ptr() == tensors[1][k].untyped_storage().data_ptr():
                first = weights[1] * first  # no transform touched it: B's own tensor, never written to
            else:
                first.mul_(weights[1])  # a fresh tensor: the sum is built in it (no third model-sized set)
            # w_1·T(B_1) + w_0·A equals w_0·A + w_1·T(B_1) bitwise (addition commutes), and so on in order:
            # the same numbers as summing out of place
            total = first.add_(weights[0] * tensors[0][k])
            for w, term in zip(weights[2:], terms[1:]):
                total = total.add_(w * term)
            mixed[k] = total
        return functional_params(self.ref.family, self.ref.config, mixed, self.names, contiguous=not self.large)

    def summed_loss(self, params: dict[str, torch.Tensor], inputs, y) -> torch.Tensor:
        kwargs = {k: v.to(self.device) for k, v in inputs.items()}
        logits = functional_call(self.module, params, args=(), kwargs=kwargs).logits
        y = y.to(self.device)
        total, _ = batch_loss(logits[:, : y.shape[1]] if y.dim() == 2 else logits, y)
        return total

    def loss_at(self, weights: list[float], transforms: list[Transform], inputs, y,
                backward: bool = False) -> torch.Tensor:
        """Mean loss on the batch (and its gradient when `backward`). A batch whose activations
        would exceed the budget (a real vocabulary's logits) runs in micro-batches: θ(w) is built
        once, each micro-batch's gradient is accumulated on a detached copy of it, and the sum is
        then carried back through the transforms. A batch that fits is one pass, as it always
        was. The backward pass through the transforms runs one parameter at a time, into
        the transforms' matrices cut loose as leaves (`_cut`), and then once from those matrices into
        the latents: each parameter's mixed tensor, gradient and saved products are let go as soon
        as its share is taken, instead of all of them living until one backward over the whole
        model ends (GPT-2-small: the step's peak)."""
        count = max(scored(y), 1)
        size = examples_per_chunk(self.ref, inputs, self.budget)
        if size >= len(y):
            loss = self.summed_loss(self.mixed_params(weights, transforms), inputs, y) / count
            if backward:
                loss.backward()
            return loss
        cuts: list[tuple[torch.Tensor, torch.Tensor]] = []
        params = self.mixed_params(weights, _cut(transforms, cuts) if backward else transforms)
        leaves = {k: v.detach().requires_grad_(backward) for k, v in params.items()}
        value = torch.zeros(())
        for i in range(0, len(y), size):
            part = self.summed_loss(leaves, {k: v[i:i + size] for k, v in inputs.items()}, y[i:i + size]) / count
            if backward:
                part.backward()
            value = value + part.detach().cpu()
        if backward:
            _backward_per_tensor(params, leaves, cuts)
        return value

    @torch.no_grad()
    def check(self, transforms: list[Transform], batch, points: list[list[float]]) -> float:
        """The mean loss at fixed points of the path or simplex, on a fixed batch."""
        return sum(float(self.loss_at(w, transforms, *batch)) for w in points) / len(points)


def _cut(transforms: list[Transform], cuts: list[tuple[torch.Tensor, torch.Tensor]]) -> list[Transform]:
    """The transforms with every tensor that carries a gradient replaced by a detached leaf copy;
    (tensor, leaf) pairs are appended to `cuts`, so the leaves' gradients can be carried on into
    the latents in one backward pass once every parameter has given its share."""
    out = []
    for transform in transforms:
        cut = Transform()
        for name, element in transform.items():
            leaves = {}
            for f in fields(element):
                value = getattr(element, f.name)
                if isinstance(value, torch.Tensor) and value.requires_grad:
                    leaves[f.name] = value.detach().requires_grad_()
                    cuts.append((value, leaves[f.name]))
            cut[name] = replace(element, **leaves) if leaves else element
        out.append(cut)
    return out


def _backward_per_tensor(params: dict[str, torch.Tensor], leaves: dict[str, torch.Tensor],
                         cuts: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Carry the gradients gathered on `leaves` (detached copies of `params`) back through the
    transforms, one parameter at a time (each one's graph and buffers freed as it goes), into the
    cut matrices, then from those into the latents."""
    for name in list(params):
        param, leaf = params.pop(name), leaves.pop(name)
        if param.requires_grad and leaf.grad is not None:
            torch.autograd.backward(param, leaf.grad)
        del param, leaf
    reached = [(tensor, leaf) for tensor, leaf in cuts if leaf.grad is not None]
    if reached:
        torch.autograd.backward([t for t, _ in reached], [leaf.grad for _, leaf in reached])


class WeightSampler:
    """Draws mixing weights from its own seeded generator (no global random state)."""

    def __init__(self, n_models: int, lambdas: str = declared_default("lambdas"),
                 alpha: float = declared_default("alpha"), seed: int = 0):
        if n_models < 2:
            raise SymalignError("learned matching needs at least two models")
        if lambdas not in LAMBDA_SAMPLERS:
            raise SymalignError(f"unknown λ distribution {lambdas!r}; choose from {', '.join(LAMBDA_SAMPLERS)}")
        if not alpha > 0:
            raise SymalignError(f"--alpha must be positive (the Dirichlet concentration); got {alpha}")
        self.n, self.lambdas, self.alpha = n_models, lambdas, alpha
        self.rng = np.random.default_rng(seed)

    def __call__(self) -> list[float]:
        if self.n > 2:
            return [float(w) for w in self.rng.dirichlet([self.alpha] * self.n)]
        u = float(self.rng.random())
        lam = {"uniform_mid": 0.4 + 0.2 * u, "half": 0.5, "uniform": u,
               "normal": min(1.0, max(0.0, 0.5 + 0.1 * float(self.rng.standard_normal())))}[self.lambdas]
        return [1.0 - lam, lam]


def check_points(n_models: int, where: str = "path") -> list[list[float]]:
    """Fixed points the stopping rule watches: λ = 0.25, 0.5, 0.75 for a pair; for N models the
    centroid and every edge midpoint (where barriers peak once the corners are matched).
    `midpoint`: λ = 0.5 (the centroid) alone, for checks that would cost more than the steps."""
    if where == "midpoint":
        return [[1.0 / n_models] * n_models]
    if n_models == 2:
        return [[0.75, 0.25], [0.5, 0.5], [0.25, 0.75]]
    points = [[1.0 / n_models] * n_models]
    for i, j in itertools.combinations(range(n_models), 2):
        w = [0.0] * n_models
        w[i] = w[j] = 0.5
        points.append(w)
    return points
