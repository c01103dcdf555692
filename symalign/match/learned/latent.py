"""Trainable group elements (latent parameters projected onto a symmetry group in the forward pass), and
what learned matching moves: each model's transform as such elements."""

from __future__ import annotations

import torch

from symalign.match.solvers import assignment
from symalign.symmetry.groups import Dense, GroupElement, Permutation, rotary_matrix
from symalign.symmetry.random import ones_complement_basis
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform


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
                 generator: torch.Generator | None = None, rotated: int | None = None):
        super().__init__()
        self.free = None  # rotary on a partially rotated head: the unrotated block's skew latent
        self.cls, self.residual, self.start, self.soft = cls, residual, start, soft
        self.frozen: Permutation | None = None  # a permutation fixed for the rest of training
        self._projection: tuple[int, torch.Tensor] | None = None  # (latent version, its assignment)
        m = start.dense()
        # G₀ is read by the continuous classes only; a permutation's latent starts at G₀ itself, and a
        # GPT-2-small MLP's 3072 × 3072 float64 copy per layer would cost 7 bytes per parameter for nothing
        self.g0 = torch.nn.Parameter(m, requires_grad=False) if cls in ("orthogonal", "invertible", "rescale",
                                                                        "rotary", "orthogonal+rescale") else None
        if cls == "orthogonal":
            n = m.shape[-1] - 1 if residual else m.shape[-1]
            self.p = torch.nn.Parameter(torch.zeros(*m.shape[:-2], n, n, dtype=torch.float64))
            if residual:
                self.register_buffer("basis", ones_complement_basis(m.shape[-1]).clone())
        elif cls == "orthogonal+rescale":  # [..., n, n]: the skew latent; [..., 0, n]: the log-scale
            self.p = torch.nn.Parameter(torch.zeros(*m.shape[:-1], m.shape[-1] + 1, dtype=torch.float64))
        elif cls == "invertible":
            self.p = torch.nn.Parameter(torch.zeros_like(m))
        elif cls == "rescale":
            self.p = torch.nn.Parameter(torch.zeros(m.shape[0], dtype=torch.float64))
        elif cls == "rotary":  # [count, pairs, 2]: log-modulus and angle
            r = m.shape[-1] if rotated is None else rotated
            self.p = torch.nn.Parameter(torch.zeros(*m.shape[:-2], r // 2, 2, dtype=torch.float64))
            if r < m.shape[-1]:
                f = m.shape[-1] - r
                self.free = torch.nn.Parameter(torch.zeros(*m.shape[:-2], f, f, dtype=torch.float64))
        elif cls == "perm" and isinstance(start, Permutation) and soft:
            noise = 0.01 * torch.rand(m.shape, generator=generator, dtype=torch.float64)
            self.p = torch.nn.Parameter(torch.log(m + noise))
        elif cls == "perm" and isinstance(start, Permutation):
            self.p = torch.nn.Parameter(m.clone())
        else:  # fixed: scaled permutations, per-head permutations
            self.p = None

    @property
    def is_permutation(self) -> bool:
        return self.p is not None and self.cls == "perm"

    @property
    def trainable(self) -> bool:
        return self.p is not None and self.frozen is None

    def hard_perm(self) -> torch.Tensor:
        """The permutation this latent currently projects to (the straight-through forward). Cached
        until the latent changes (its version counter moves with every in-place update), so a step
        solves each assignment once however often the projection is read."""
        if self.frozen is not None:
            return self.frozen.perm
        version = self.p._version
        if self._projection is None or self._projection[0] != version:
            self._projection = (version, assignment(self.p.detach()).to(self.p.device))
        return self._projection[1]

    def freeze(self) -> None:
        """Fix a permutation at its current projection (soft ones are rounded here). The latent is
        never read again, so it is let go (a dense n × n float64 matrix per MLP: 28 bytes per
        parameter of GPT-2-small with its snapshots and momentum when frozen from the start)."""
        if self.is_permutation and self.frozen is None:
            self.frozen = Permutation(self.hard_perm().cpu())
            self.p = torch.nn.Parameter(torch.empty(0, dtype=self.p.dtype, device=self.p.device), requires_grad=False)
            self._projection = None

    def element(self) -> GroupElement:
        if self.p is None:
            return self.start
        if self.cls == "orthogonal":
            r = torch.linalg.matrix_exp(_skew(self.p))
            if self.residual:
                one = torch.ones(1, 1, dtype=torch.float64, device=r.device)
                r = self.basis @ torch.block_diag(one, r) @ self.basis.T
            return Dense(self.g0 @ r, "orthogonal")
        if self.cls == "orthogonal+rescale":
            n = self.g0.shape[-1]
            r = torch.linalg.matrix_exp(_skew(self.p[..., :n]))
            return Dense(self.g0 @ r * torch.exp(self.p[..., :1, n:]), "orthogonal+rescale")
        if self.cls == "invertible":
            eye = torch.eye(self.g0.shape[-1], dtype=torch.float64, device=self.g0.device)
            return Dense(self.g0 @ (eye + self.p), "invertible")
        if self.cls == "rescale":
            return Dense(self.g0 * torch.exp(self.p)[:, None, None], "rescale")
        if self.cls == "rotary":
            radius = torch.exp(self.p[..., 0])
            free = None if self.free is None else torch.linalg.matrix_exp(_skew(self.free))
            return Dense(self.g0 @ rotary_matrix(radius * torch.cos(self.p[..., 1]), radius * torch.sin(self.p[..., 1]),
                                                 free), "rotary")
        if self.frozen is not None:
            return self.frozen
        if self.soft:
            return Dense(sinkhorn(self.p), "perm")  # a doubly stochastic relaxation, used on both sides
        eye = torch.eye(self.p.shape[0], dtype=torch.float64, device=self.p.device)
        return Dense(eye[self.hard_perm()] + self.p - self.p.detach(), "perm")  # straight-through

    def final(self) -> GroupElement:
        """The element with the latent projected exactly onto the group (no gradient parts)."""
        with torch.no_grad():
            if self.p is None:
                return self.start
            if self.cls == "perm":
                return Permutation(self.hard_perm().cpu())
            el = self.element()
            return Dense(el.matrix.detach().cpu().clone(), el.kind)

    def snapshot(self) -> dict:
        """What `restore` needs to return to this exact state (the best state seen so far)."""
        return {"p": None if self.p is None else self.p.detach().clone(), "frozen": self.frozen}

    def restore(self, state: dict) -> None:
        if self.p is not None and self.p.shape != state["p"].shape:  # a state from before a freeze
            self.p = torch.nn.Parameter(state["p"].clone(), requires_grad=False)
        elif self.p is not None:
            with torch.no_grad():
                self.p.copy_(state["p"])
        self.frozen = state["frozen"]
        self._projection = None


class NormalizedMomentum:
    """The update for permutation latents: momentum on each latent's gradient divided by its largest
    entry. Adam would move every entry of Z by about the step size whatever its gradient, so entries
    with tiny, noisy gradients would flip units as readily as informative ones (measured: 70% of MLP
    units moved, and a worse barrier); scaled per tensor, the strongest consistent entries move by
    `lr` per step and the rest in proportion to their evidence."""

    def __init__(self, params: list[torch.nn.Parameter], lr: float, momentum: float = 0.9):
        self.params, self.lr, self.momentum = params, lr, momentum
        self.buffers = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self) -> None:
        for p, buf in zip(self.params, self.buffers):
            if p.grad is None:
                continue
            g = p.grad / p.grad.abs().max().clamp_min(1e-30)
            buf.mul_(self.momentum).add_(g, alpha=1 - self.momentum)
            p.sub_(self.lr * buf)


class Mover:
    """One model's latent transform, assembled the same way for training, checks and output."""

    def __init__(self, start: Transform, spec: SymmetrySpec, classes: dict[str, str], soft: bool,
                 generator: torch.Generator, device: torch.device):
        self.spec = spec
        self.latents = {name: LatentElement(el, classes[spec.spaces[name].kind], spec.spaces[name].fixes_ones,
                                            soft, generator, spec.spaces[name].rotated).to(device)
                        for name, el in start.items()}
        # per-head maps are learned per *B head*: when a head permutation moves, its maps move with it
        self.start_inverse = {name: torch.argsort(el.perm).to(device) for name, el in start.items()
                              if isinstance(el, Permutation)}

    def parameters(self, permutations: bool) -> list[torch.nn.Parameter]:
        out = [l.p for l in self.latents.values() if l.trainable and l.is_permutation == permutations]
        if not permutations:  # partial rotary: the unrotated blocks' latents train with the rest
            out += [l.free for l in self.latents.values() if l.free is not None]
        return out

    def permutations(self) -> dict[str, torch.Tensor]:
        return {name: l.hard_perm() for name, l in self.latents.items() if l.is_permutation}

    def transform(self, hard: bool) -> Transform:
        out = Transform()
        for name, latent in self.latents.items():
            out[name] = Permutation(latent.hard_perm()) if hard and latent.is_permutation else latent.element()
        for name in out:
            parent = self.latents.get(self.spec.spaces[name].batched_by or "")
            if parent is not None and parent.is_permutation and (hard or not parent.soft or parent.frozen):
                order = self.start_inverse[self.spec.spaces[name].batched_by][parent.hard_perm()]
                out[name] = out[name].select(order)
        return out

    def step_transform(self) -> Transform:
        """The transform for a training step: orthogonal, invertible and permutation matrices in float32
        (float64 costs 16% of a step and buys nothing there); checks and the output keep float64."""
        return Transform({name: Dense(el.matrix.float(), el.kind) if _single_precision(el) else el
                          for name, el in self.transform(hard=False).items()})

    def final(self) -> Transform:
        out = self.transform(hard=True)
        return Transform({name: el if isinstance(el, Permutation) else _detached(el) for name, el in out.items()})

    def freeze(self) -> None:
        for latent in self.latents.values():
            latent.freeze()

    def snapshot(self) -> dict:
        return {name: l.snapshot() for name, l in self.latents.items()}

    def restore(self, state: dict) -> None:
        for name, l in self.latents.items():
            l.restore(state[name])


def _single_precision(element: GroupElement) -> bool:
    return isinstance(element, Dense) and element.kind in ("orthogonal", "perm", "invertible")


def _detached(element: GroupElement) -> GroupElement:
    if isinstance(element, Dense):
        return Dense(element.matrix.detach().cpu().clone(), element.kind)
    return element
