"""Weight matching (data-free, Git Re-Basin style): coordinate descent over the spec's spaces.

Each step re-solves one space with every other space held at its current element: a linear
assignment for permutations, Procrustes for orthogonal maps (fixing 1 on the residual), least
squares for invertible maps. Heads are matched as whole units first, by a cost that no
within-head map changes (QK/OV circuits or spectra); their per-head maps are then re-solved in
the new head order. Sweeps run in random order until the distance stops improving.

The residual starts from Procrustes (or assignment) on the boundary tensors only (token and
position embeddings, the head's rows, patch embedding): their rows correspond across models
without knowing any other space, unlike interior weights (the data-free trap in DESIGN.md)."""

from __future__ import annotations

import random
import time
from typing import Callable

import torch

from symalign.match.heads import head_cost
from symalign.match.solvers import assignment, solve
from symalign.symmetry.groups import Permutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked

Tensors = dict[str, torch.Tensor]
Progress = Callable[[int, int], None]


def distance(a: Tensors, b: Tensors) -> float:
    """Relative distance ‖A − B‖ / ‖A‖ over all tensors."""
    num = sum(float((a[k].double() - b[k].double()).pow(2).sum()) for k in a)
    return (num / sum(float(a[k].double().pow(2).sum()) for k in a)) ** 0.5


def _touching(spec: SymmetrySpec, spaces: list[str]) -> list[str]:
    return sorted({name for s in spaces for name, _, _ in spec.axes_of(s)})


def _mapped(b: Tensors, spec: SymmetrySpec, transform: Transform, spaces: list[str], drop: set[str]) -> Tensors:
    """The tensors touching `spaces`, with every element except those in `drop` applied."""
    others = Transform({k: v for k, v in transform.items() if k not in drop})
    return apply_unchecked({n: b[n] for n in _touching(spec, spaces)}, spec, others)


def boundary_start(a: Tensors, b: Tensors, spec: SymmetrySpec, cls: str, boundary: list[str]):
    """Residual element from the boundary tensors alone (their rows correspond across models)."""
    sub = SymmetrySpec(spec.family, spec.spaces, {n: spec.tensors[n] for n in boundary}, spec.canonical)
    return solve(cls, a, b, sub, "residual")


def weight_match(a: Tensors, b: Tensors, spec: SymmetrySpec, classes: dict[str, str], boundary: list[str],
                 head_cost_kind: str = "circuit", max_sweeps: int = 30, seed: int = 0,
                 progress: Progress | None = None, tol: float = 1e-5) -> tuple[Transform, list[dict]]:
    """Transform T with T(B) ≈ A, and the per-sweep history (distance, seconds)."""
    rng = random.Random(seed)
    transform = Transform()
    history = [{"sweep": 0, "distance": distance(a, b), "seconds": 0.0}]
    start = time.perf_counter()
    res_cls = classes.get("residual", "none")
    if res_cls != "none":
        transform["residual"] = boundary_start(a, b, spec, res_cls, boundary)
        history.append({"sweep": 0, "distance": distance(a, apply_unchecked(b, spec, transform)),
                        "seconds": time.perf_counter() - start, "step": "residual from boundary tensors"})
    units = _units(spec, classes)
    best = history[-1]["distance"]
    for sweep in range(1, max_sweeps + 1):
        rng.shuffle(units)
        for unit in units:
            _update(unit, a, b, spec, classes, transform, head_cost_kind)
        current = distance(a, apply_unchecked(b, spec, transform))
        history.append({"sweep": sweep, "distance": current, "seconds": time.perf_counter() - start})
        if progress:
            progress(sweep, max_sweeps)
        if current > best * (1 - tol):  # converged: less than `tol` relative improvement
            break
        best = current
    return transform, history


def _units(spec: SymmetrySpec, classes: dict[str, str]) -> list[tuple[str, ...]]:
    """Update units: the residual, each MLP, and each layer's attention (heads, then qk, vo)."""
    units: list[tuple[str, ...]] = []
    if classes.get("residual", "none") != "none":
        units.append(("residual",))
    layers = sorted({int(s.name.split(".")[1]) for s in spec.spaces.values() if s.name.startswith("layer.")})
    for i in layers:
        if classes.get("mlp", "none") != "none":
            units.append((f"layer.{i}.mlp",))
        attention = tuple(f"layer.{i}.{k}" for k in ("heads", "qk", "vo") if classes.get(k, "none") != "none")
        if attention:
            units.append(attention)
    return units


def _update(unit: tuple[str, ...], a: Tensors, b: Tensors, spec: SymmetrySpec, classes: dict[str, str],
            transform: Transform, head_cost_kind: str) -> None:
    for space in unit:
        kind = spec.spaces[space].kind
        if kind == "heads":
            layer = int(space.split(".")[1])
            inner = {f"layer.{layer}.qk", f"layer.{layer}.vo"}
            mapped = _mapped(b, spec, transform, [space], drop={space} | inner)
            transform[space] = Permutation(assignment(head_cost(a, mapped, layer, head_cost_kind)))
            for name in inner:  # stale: they were solved for the old head order
                transform.pop(name, None)
        else:
            mapped = _mapped(b, spec, transform, [space], drop={space})
            transform[space] = solve(classes[kind], a, mapped, spec, space)
