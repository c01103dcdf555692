"""Which component's transform carries learned matching's gain over weight matching (Theus et al.
§6): start from weight matching's transform and switch one group of spaces (the residual map, a
block's attention maps, a block's MLP permutation) to what learned matching found, then measure
the barrier. A group whose swap closes most of the gap between the two barriers is where the
learned correction matters; one that changes nothing could have stayed weight matching's.

Learned matching keeps weight matching's permutations beside learned rotations, so a block's head
order and its per-head maps stay consistent when the attention group is swapped whole."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

from symalign.landscape.interpolation import interpolation_curve
from symalign.models import transformed
from symalign.models.family import TransformerModel
from symalign.symmetry.transform import Transform

_SPACE = re.compile(r"^layer\.(\d+)\.(\w+)$")


@dataclass
class SwapBarrier:
    group: str
    spaces: list[str]
    barrier: float  # weight matching's transform with this group's elements learned matching's
    closed: float  # (weight barrier − this) / (weight barrier − learned barrier): the share of the gain

    def to_json(self) -> dict:
        return asdict(self)


def transform_groups(weight: Transform, learned: Transform) -> dict[str, list[str]]:
    """The spaces either transform holds, by group: residual, each block's attention (heads and the
    maps inside them), each block's MLP. Groups where the two transforms agree are left out."""
    groups: dict[str, list[str]] = {}
    for space in sorted(set(weight) | set(learned)):
        m = _SPACE.match(space)
        group = "residual" if not m else f"block {m.group(1)} {'MLP' if m.group(2) == 'mlp' else 'attention'}"
        groups.setdefault(group, []).append(space)
    return {g: spaces for g, spaces in groups.items() if any(_differs(weight.get(s), learned.get(s)) for s in spaces)}


def _differs(x, y) -> bool:
    if x is None or y is None:
        return x is not y
    return any(not (u.shape == v.shape and bool((u == v).all()))
               for u, v in zip(x.tensors().values(), y.tensors().values()))


def swap_barriers(a: TransformerModel, b: TransformerModel, weight: Transform, learned: Transform, data,
                  points: int = 11, max_examples: int | None = None, device="cpu",
                  progress: Callable[[int, int], None] | None = None) -> tuple[float, float, list[SwapBarrier]]:
    """Weight matching's barrier, learned matching's, and each group's swap, the largest share first.
    `a`, `b` canonical; both transforms map B into A's basis."""
    def barrier(transform: Transform) -> float:
        return interpolation_curve(a, transformed(b, transform), data, points=points, max_examples=max_examples,
                                   device=device).barrier

    groups = transform_groups(weight, learned)
    base, best = barrier(weight), barrier(learned)
    gain = base - best
    out = []
    for k, (group, spaces) in enumerate(groups.items()):
        swapped = Transform({**weight, **{s: learned[s] for s in spaces if s in learned}})
        for s in spaces:
            if s not in learned:
                swapped.pop(s, None)
        value = barrier(swapped)
        out.append(SwapBarrier(group, spaces, value, (base - value) / gain if abs(gain) > 1e-12 else float("nan")))
        if progress:
            progress(k + 1, len(groups))
    return base, best, sorted(out, key=lambda s: s.barrier)
