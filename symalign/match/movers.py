"""What learned matching moves: each model's transform as latent group elements (`LatentElement`),
assembled the same way for a training step, a check and the output, and the update rule for
permutation latents."""

from __future__ import annotations

import torch

from symalign.match.latent import LatentElement
from symalign.symmetry.groups import Dense, GroupElement, Permutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform


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
