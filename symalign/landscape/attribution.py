"""Where a barrier lives (Theus et al. §6's question, as a command): the barrier when only one group
of parameters moves along the path, for each block's attention, MLP and norms, the embeddings and
the head. "Rest at A": the group goes from A's values to B's, everything else stays A's; "rest at
B": the same with everything else at B's. Two numbers per side: the rise of the loss when the group
is halfway (λ = 0.5) above the real model on that side (A, or B), which is what ranks the groups,
and the barrier of the group's own path (above the line to its other end, a hybrid that may be no
model at all before alignment, so it can read 0 where the rise does not). A group whose rise is 0
holds none of the barrier; the groups' rises do not add up to the whole (the loss is not additive),
so they rank, not split.

Run on the canonical pair after alignment (a matcher's B), it says which group holds what alignment
left; on the raw pair, where the vanilla barrier sits."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from symalign.landscape.interpolation import interpolation_curve
from symalign.models.family import TransformerModel

_BLOCK = re.compile(r"^layer\.(\d+)\.(attn|mlp|ln\d*)")
KIND_NAMES = {"attn": "attention", "mlp": "MLP"}


@dataclass
class GroupBarrier:
    group: str
    tensors: int  # how many logical tensors the group holds
    rise_at_a: float  # loss with only this group halfway to B's and the rest A's, minus A's loss
    rise_at_b: float  # ... the rest B's, minus B's loss
    rest_at_a: float  # the barrier of the path that moves only this group, the rest A's
    rest_at_b: float  # ... the rest B's

    @property
    def mean(self) -> float:
        """The mean rise of the two sides: what ranks the groups."""
        return (self.rise_at_a + self.rise_at_b) / 2

    def to_json(self) -> dict:
        return {"group": self.group, "tensors": self.tensors, "rise_at_a": self.rise_at_a,
                "rise_at_b": self.rise_at_b, "mean_rise": self.mean, "rest_at_a": self.rest_at_a,
                "rest_at_b": self.rest_at_b}


def _midpoint(curve) -> float:
    i = min(range(len(curve.lambdas)), key=lambda j: abs(curve.lambdas[j] - 0.5))
    return curve.loss[i]


def parameter_groups(model: TransformerModel) -> dict[str, list[str]]:
    """Logical tensors by group: embeddings, each block's attention, MLP and norms, and the head
    (final norm included). A head tied to the token embedding is one tensor, so it goes with the
    embeddings (moving one without the other would not be a model)."""
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    groups: dict[str, list[str]] = {}
    for name in model.tensors:
        block = _BLOCK.match(name)
        if block:
            kind = KIND_NAMES.get(block.group(2), "norms")
            group = f"block {block.group(1)} {kind}"
        elif name.startswith("embed.") or (tied and name == "head.weight"):
            group = "embeddings"
        else:
            group = "head"
        groups.setdefault(group, []).append(name)
    return groups


def attribute(a: TransformerModel, b: TransformerModel, data, points: int = 11, max_examples: int | None = None,
              device="cpu", progress: Callable[[int, int], None] | None = None) -> tuple[float, list[GroupBarrier]]:
    """The whole path's barrier and each group's numbers, the highest mean rise first. `a` and `b` in
    one basis (canonical forms, B aligned to A or not); `points` odd, so that λ = 0.5 is one of them."""
    groups = parameter_groups(a)
    curve = interpolation_curve(a, b, data, points=points, max_examples=max_examples, device=device)
    whole, loss_a, loss_b = curve.barrier, curve.loss[0], curve.loss[-1]
    out = []
    for k, (group, names) in enumerate(groups.items()):
        only_group_b = a.with_tensors({**a.tensors, **{n: b.tensors[n] for n in names}})
        b_but_group_a = b.with_tensors({**b.tensors, **{n: a.tensors[n] for n in names}})
        rest_a = interpolation_curve(a, only_group_b, data, points=points, max_examples=max_examples, device=device)
        rest_b = interpolation_curve(b_but_group_a, b, data, points=points, max_examples=max_examples, device=device)
        out.append(GroupBarrier(group, len(names), _midpoint(rest_a) - loss_a, _midpoint(rest_b) - loss_b,
                                rest_a.barrier, rest_b.barrier))
        if progress:
            progress(k + 1, len(groups))
    return whole, sorted(out, key=lambda g: -g.mean)
