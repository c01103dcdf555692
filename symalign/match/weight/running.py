"""B as weight matching sees it: B under the transform found so far, updated one space at a time.

Two economies keep a coordinate-descent step near the cost of its own solve:
- a step reads and rewrites only the tensors its space touches, by applying the *change* of that
  space's element (never the whole transform);
- a tensor that a single permutation or orthogonal space acts on, and that is larger than that
  space's correlation (token embeddings, an untied LM head), is never transformed at all: its
  correlation with A, M = A·Bᵀ, is computed once; under G it is M·Gᵀ, and its share of ‖A − G·B‖²
  is ‖A‖² + ‖B‖² − 2⟨G, M⟩ (G orthogonal).

Precision (`compute`): float64 everywhere, or float32 for the big work (cost matmuls, applying a
step to B, B between steps) with the correlations summed, the solves and the distance in float64.
On a CPU float32 takes about a quarter off a GPT-2-small run (benchmarks/weight_scale.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from symalign.match.solvers import correlation, cross
from symalign.match.weight.lagging import LaggingGroups
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.symmetry.groups import CO, CONTRA, Dense, GroupElement, Permutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked

Tensors = dict[str, torch.Tensor]
CHUNK = 1 << 20  # elements per slice of a folded tensor's rows (no full-size float64 copy)
SLICE = 1 << 16  # elements per slice when summing squares: its float64 temporary (512 KiB) stays under glibc's
# mmap threshold (symalign.memory), so it reuses heap pages instead of faulting in fresh ones; 1 << 20 made
# two new mappings a slice, a third of a GPT-2-small run's system time went to page faults
FOLD_RATIO = 4  # fold a tensor once it holds this many times the elements of its space's correlation


def squared_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖² summed in float64, slice by slice: a full-size difference would cost an allocation as
    large as the tensor (and torch.dist is several times slower than a dot product here). Two float32
    tensors are subtracted in float32 (one rounding of each difference, 6e-8 relative, far below the
    stopping rule's 1e-5) and only the difference is widened: half the conversions of widening both,
    and the distance is most of an inner pass's bookkeeping at GPT-2 scale (docs/benchmarks.md)."""
    fa, fb = a.reshape(-1), b.reshape(-1)
    narrow = fa.dtype == fb.dtype == torch.float32
    total = torch.zeros((), dtype=torch.float64, device=fa.device)
    for i in range(0, fa.numel(), SLICE):
        if narrow:
            d = (fa[i:i + SLICE] - fb[i:i + SLICE]).double()
        else:  # float64 (the zoo's weight matching): exact, as it always was
            d = fa[i:i + SLICE].double() - fb[i:i + SLICE].double()
        total += d @ d
    return float(total)


def squared_norm(t: torch.Tensor) -> float:
    """‖t‖² in float64, converting slice by slice."""
    flat = t.reshape(-1)
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    for i in range(0, flat.numel(), SLICE):
        piece = flat[i:i + SLICE].double()
        total += piece @ piece
    return float(total)


def _static_space(spec: SymmetrySpec, name: str, classes: dict[str, str]) -> str | None:
    """The one space a tensor could be folded into (see the module docstring), or None."""
    tags = [t for t in spec.tensors[name] if t is not None]
    if len(tags) != 1 or tags[0].variance not in (CO, CONTRA):
        return None
    space = spec.spaces[tags[0].space]
    if space.batched_by is not None or classes.get(space.kind, "none") not in ("perm", "orthogonal"):
        return None
    return space.name


def _folded_cross(a: torch.Tensor, b: torch.Tensor, axis: int) -> torch.Tensor:
    """M = A·Bᵀ along `axis` in float64 whatever the compute precision (once per run: exact), summed over
    slices of the other axes converted one at a time (the whole tensors in float64 would be two more
    copies of an embedding matrix)."""
    ua, ub = a.movedim(axis, -1).reshape(-1, a.shape[axis]), b.movedim(axis, -1).reshape(-1, b.shape[axis])
    total = torch.zeros(1, a.shape[axis], a.shape[axis], dtype=torch.float64, device=a.device)
    rows = max(1, CHUNK // a.shape[axis])
    for i in range(0, ua.shape[0], rows):
        cross(ua[i:i + rows].double().T, ub[i:i + rows].double().T, into=total)
    return total


def _moved_units(elements: dict[str, GroupElement], space: str, tensors: list[torch.Tensor]) -> torch.Tensor | None:
    """The units a permutation of `space` alone moves (perm[i] ≠ i): the only columns of a 2-D tensor's
    unfolding along its other axis that change. None when that is not the case (found by comparing then)."""
    element = elements.get(space)
    if len(elements) != 1 or not isinstance(element, Permutation) or any(t.dim() != 2 for t in tensors):
        return None
    perm = element.perm
    return (perm != torch.arange(len(perm), device=perm.device)).nonzero().squeeze(1).to(tensors[0].device)


class PrecisionView(Mapping):
    """Tensors read in `dtype` on each access, never stored so: A is only ever read, and a float64
    copy of it would cost 8 bytes per parameter (a GPT-2-small: 0.7 GB). Converting float32 to
    float64 is exact, so every result is the same as with a stored copy."""

    def __init__(self, tensors: Tensors, dtype: torch.dtype = torch.float64):
        self._tensors, self.dtype = tensors, dtype

    def __getitem__(self, name: str) -> torch.Tensor:
        return self._tensors[name].to(self.dtype)

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


def working(element: GroupElement, dtype: torch.dtype) -> GroupElement:
    """`element` as a step applies it in `dtype`: a dense matrix rounded to float32 multiplies float32
    weights at float32 speed (a float64 one would widen every tensor it touches)."""
    if isinstance(element, Dense) and element.matrix.dtype != dtype and dtype == torch.float32:
        return Dense(element.matrix.to(dtype), element.kind)
    return element


class RunningModel:
    """A (read in the compute precision), and B under the current transform."""

    def __init__(self, a: Tensors, b: Tensors, spec: SymmetrySpec, classes: dict[str, str], consume_b: bool = False,
                 compute: torch.dtype = torch.float64):
        self.compute = compute
        self.static: dict[str, tuple[str, torch.Tensor]] = {}  # tensor -> (space, M = A·Bᵀ [1, n, n])
        self.static_norms = 0.0  # Σ ‖A‖² + ‖B‖² over the static tensors
        norm_a = 0.0
        for name in spec.tensors:
            space = _static_space(spec, name, classes)
            if space is None or a[name].numel() < FOLD_RATIO * spec.spaces[space].size ** 2:
                continue
            axis = next(i for i, t in enumerate(spec.tensors[name]) if t is not None)
            self.static[name] = (space, _folded_cross(a[name], b[name], axis))
            norm_a += squared_norm(a[name])
            self.static_norms += squared_norm(a[name]) + squared_norm(b[name])
        dynamic = [n for n in spec.tensors if n not in self.static]
        self.spec = SymmetrySpec(spec.family, spec.spaces, {n: spec.tensors[n] for n in dynamic}, spec.canonical)
        self.spec_all = spec
        size = self.parameters = sum(t.numel() for t in a.values())
        # A is read in the compute precision at every step. Below LARGE_MODEL_PARAMETERS it is converted once
        # (the zoo: a float64 copy costs kilobytes, while converting on every read copied a tensor 6,959 times in a
        # vit-digits run); a real-size A is converted on each read (PrecisionView: no float64 copy of A).
        # Widening float32 is exact, so both give the same bits.
        self.a = ({n: a[n].to(compute) for n in dynamic} if size <= LARGE_MODEL_PARAMETERS
                  else PrecisionView({n: a[n] for n in dynamic}, compute))
        # B is kept in float64 while that is cheap; a real-size model keeps it in float32 between
        # steps (4 bytes per parameter less), as does a float32 computation.
        self.store = torch.float64 if size <= LARGE_MODEL_PARAMETERS and compute == torch.float64 else torch.float32
        # consume_b: B's dict is handed over; its tensors live on here only (see take_aligned)
        self.b = {n: (b.pop(n) if consume_b else b[n]).to(self.store) for n in dynamic}
        self.static_b = {n: b.pop(n) for n in self.static} if consume_b else {}
        self.norms_a = {n: squared_norm(t) for n, t in self.a.items()}  # ‖A‖² per tensor: A never moves
        self.norm_a = math.sqrt(norm_a + sum(self.norms_a.values()))
        self._touching = {s: sorted({n for n, _, _ in self.spec.axes_of(s)}) for s in spec.spaces}
        # tensors the inner passes leave in place: one lagging group of their own (symalign.match.weight.lagging)
        self.held: LaggingGroups | None = None
        # each MLP's tensors rotated by an orthogonal residual only when their MLP next reads them
        self.lazy: LaggingGroups | None = None
        self._residual_axis: dict[str, int] = {}
        if classes.get("residual") == "orthogonal" and "residual" in spec.spaces:
            self._start_lazy("residual")

    def _start_lazy(self, space: str) -> None:
        """Group each MLP's tensors that only it and `space` act on (symalign.match.weight.lagging)."""
        groups: dict[str, frozenset[str]] = {}
        for mlp in self.spec.spaces.values():
            if mlp.kind != "mlp" or mlp.batched_by is not None:
                continue
            names = set()
            for name in set(self._touching[mlp.name]) & set(self._touching[space]):
                tags = [t for t in self.spec.tensors[name] if t is not None]
                on_space = [i for i, t in enumerate(self.spec.tensors[name]) if t is not None and t.space == space]
                if (len(tags) == 2 and len(on_space) == 1 and {t.space for t in tags} == {mlp.name, space}
                        and self.spec.tensors[name][on_space[0]].variance in (CO, CONTRA)):
                    names.add(name)
                    self._residual_axis[name] = on_space[0]
            if names:
                groups[mlp.name] = frozenset(names)
        if not groups:
            return
        grouped = sorted(set().union(*groups.values()))
        cross = self.correlation(space, None, names=grouped)[0]
        norms = sum(self.norms_a[n] + squared_norm(self.b[n]) for n in grouped)
        self.lazy = LaggingGroups(space, groups, cross, norms)

    def _lagging(self) -> frozenset[str]:
        return self.lazy.names if self.lazy is not None else frozenset()

    def bring_up_to_date(self, names=None) -> None:
        """Rotate the lagging groups that hold any of `names` (all when None) into the residual's current frame:
        afterwards B's tensors there are B under the transform (before a read, a check, or the end)."""
        if self.lazy is None:
            return
        groups = self.lazy.groups if names is None else {self.lazy.member[n] for n in names if n in self.lazy.member}
        for group in sorted(groups):
            change = self.lazy.lag(group)
            if change is not None:
                self._move(sorted(self.lazy.groups[group]), Transform({self.lazy.space: working(change, self.compute)}))

    def hold(self, space: str, names: set[str]) -> None:
        """Keep `space`'s changes to `names` pending (one matrix) until `release`: no step reads them.
        Their K is this space's correlation restricted to them, formed once here."""
        held = frozenset(names & set(self.b)) - self._lagging()
        cross = self.correlation(space, None, names=sorted(held))[0]
        norms = sum(self.norms_a[n] + squared_norm(self.b[n]) for n in held)
        self.held = LaggingGroups(space, {"held": held}, cross, norms)

    def release(self) -> None:
        """Apply the pending change to the held tensors; they are B under the transform again."""
        held, self.held = self.held, None
        change = held.lag("held") if held is not None else None
        if change is not None:
            self._move(sorted(held.names), Transform({held.space: working(change, self.compute)}))

    def _move(self, names: list[str], transform: Transform) -> None:
        """Replace each of `names` in B by its image under `transform`, one tensor at a time (the old one
        freed as its successor lands: the residual touches all of B)."""
        for name in names:
            self.b[name] = apply_unchecked({name: self.b[name].to(self.compute)}, self.spec,
                                           transform)[name].to(self.store)

    def take_aligned(self, transform: Transform) -> Tensors:
        """B under `transform`, on the CPU, from this working copy (emptied as it goes) and the static
        tensors the model was built with `consume_b` (transformed now, once). Only for a consumed B."""
        self.bring_up_to_date()
        out = {}
        for name in list(self.b):
            out[name] = self.b.pop(name).to("cpu", torch.float32)
        moved = Transform({k: v.to("cpu") for k, v in transform.items()})
        for name in list(self.static_b):
            out.update(apply_unchecked({name: self.static_b.pop(name).to("cpu")}, self.spec_all, moved))
        return out

    def current_b(self, name: str) -> torch.Tensor:
        """B's tensor `name` under the transform so far (stored here; read from the files when streamed)."""
        return self.b[name]

    def touching(self, space: str) -> Mapping[str, torch.Tensor]:
        """The transformed tensors `space` acts on, as they are now (converted on access: the residual
        touches every tensor, and a float64 copy of them all at once would double B)."""
        held = self._held_names()
        if self.lazy is not None and space == self.lazy.space:
            held = held | self._lagging()  # their share comes from self.lazy
        else:
            self.bring_up_to_date(self._touching[space])
        return PrecisionView({n: self.b[n] for n in self._touching[space] if n not in held}, self.compute)

    def _held_names(self) -> frozenset[str]:
        return self.held.names if self.held is not None else frozenset()

    def touched(self, space: str) -> set[str]:
        """The names of the tensors `space` acts on (what a pending change of it would move)."""
        return set(self._touching[space])

    def act(self, elements: dict[str, GroupElement], tensors: Tensors | None = None) -> Mapping[str, torch.Tensor]:
        """Apply `elements` (each in the current head order) to `tensors` (default: those the
        elements' spaces touch, as they are now) and keep the result as the current B."""
        lazy = self.lazy if self.lazy is not None and self.lazy.space in elements else None
        if lazy is not None:
            if tensors is not None:
                raise ValueError("RunningModel.act: a lagging space's element with explicit tensors")
            if len(elements) > 1:  # the others first: they commute with the lagging space's element
                rest = dict(self.act({k: v for k, v in elements.items() if k != lazy.space}))
                return PrecisionView({**rest, **self.act({lazy.space: elements[lazy.space]})}, self.compute)
        transform = Transform({k: working(v, self.compute) for k, v in elements.items()})
        if self.held is not None and self.held.space in elements:
            self.held.moved(elements[self.held.space])  # pending for the held tensors
        if lazy is not None:
            lazy.moved(elements[lazy.space])  # the groups lag by one more step
            names = sorted(set(self._touching[lazy.space]) - self._held_names() - self._lagging())
            self._move(names, transform)
            return PrecisionView({n: self.b[n] for n in names}, self.compute)
        if tensors is None:
            names = sorted({n for space in elements for n in self._touching[space]} - self._held_names())
            self.bring_up_to_date(names)
            old = {n: self.b[n] for n in names if n in self._lagging()}
            self._move(names, transform)
            self._rewritten(old, elements)
            return PrecisionView({n: self.b[n] for n in names}, self.compute)
        self.bring_up_to_date(tensors)
        old = {n: self.b[n] for n in tensors if n in self._lagging()}
        out = apply_unchecked(tensors, self.spec, transform) if elements else dict(tensors)
        self.b.update({n: t.to(self.store) for n, t in out.items()})
        self._rewritten(old, elements)
        return out

    def _rewritten(self, old: Tensors, elements: dict[str, GroupElement]) -> None:
        """Tell the lagging groups that their tensors in `old` were replaced in their own frame (by `elements`)."""
        if not old:
            return
        keeps_norms = all(isinstance(e, Permutation) or getattr(e, "kind", None) in ("perm", "orthogonal")
                          for e in elements.values())
        for group in sorted({self.lazy.member[n] for n in old}):
            names = [n for n in old if self.lazy.member[n] == group]
            change = 0.0 if keeps_norms else sum(squared_norm(self.b[n]) - squared_norm(old[n]) for n in names)
            self.lazy.rewritten(group, self.a, {n: old[n] for n in names}, {n: self.b[n] for n in names},
                                self._residual_axis, change, _moved_units(elements, group, [old[n] for n in names]))

    def correlation(self, space: str, element: GroupElement | None, names: list[str] | None = None,
                    dtype: torch.dtype | None = None, widen: bool = True) -> torch.Tensor:
        """C(A, B now) on `space`, where `element` is the space's current element (it reaches the
        static tensors only here); `names` restricts the sum to those tensors; `dtype` overrides the
        compute precision of the products; `widen=False`: a large sum may stay in that precision
        (symalign.match.solvers.correlation)."""
        tensors, spec = self.touching(space), self.spec
        if names is not None or self.held is not None or self.lazy is not None:  # a subset: the spec names only those
            kept = [n for n in tensors if names is None or n in names]  # keys only: a streamed B reads on access
            spec = SymmetrySpec(spec.family, spec.spaces, {n: spec.tensors[n] for n in kept}, spec.canonical)
        c = correlation(self.a, tensors, spec, space, dtype=dtype or self.compute, widen=widen)
        if self.held is not None and self.held.space == space and names is None:
            c = c + self.held.correlation().to(c.device)
        if self.lazy is not None and self.lazy.space == space and names is None:
            c = c + self.lazy.correlation().to(c.device)
        for name, (s, m) in self.static.items():
            if s != space or (names is not None and name not in names):
                continue
            if element is None:
                c = c + m
            elif isinstance(element, Permutation):
                c = c + m.index_select(-1, element.perm.to(m.device))  # M·Pᵀ: column j is M's column perm[j]
            else:
                c = c + m @ element.dense().to(m.device).mT
        return c

    def distance(self, transform: Transform) -> float:
        """‖A − T(B)‖ / ‖A‖ over all tensors, static ones included."""
        held = self._held_names() | self._lagging()
        total = sum(squared_distance(self.a[n], self.current_b(n)) for n in self.spec.tensors if n not in held)
        total += self.static_norms
        if self.held is not None:
            total += self.held.squared_distance()
        if self.lazy is not None:
            total += self.lazy.squared_distance()
        for space, m in self.static.values():
            g = transform.get(space)
            if g is None:
                total -= 2 * float(m.diagonal(dim1=-2, dim2=-1).sum())
            elif isinstance(g, Permutation):
                total -= 2 * float(m[0][torch.arange(g.size, device=m.device), g.perm.to(m.device)].sum())
            else:
                total -= 2 * float((g.dense().to(m.device) * m[0]).sum())
        return math.sqrt(max(total, 0.0)) / self.norm_a
