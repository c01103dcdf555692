"""A transform: one group element per hidden space, applied to logical tensors through the spec.

Per-head elements (qk, vo) are stacks indexed by head. With a head permutation p, the combined
action on a head-split tensor is q'[h] = G_h · q[p[h]]: heads are reordered first, then each new
head gets its own map. Composition and inverse follow from that one rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from symalign.errors import InadmissibleError, SymalignError
from symalign.symmetry.groups import Dense, ScaledPermutation, element_from_tensors, rotary_matrix, rotary_parts
from symalign.symmetry.spec import SymmetrySpec

FORMAT = "symalign.transform/1"
START = "start/"  # prefix of the starting transform a learned matcher keeps beside its result


class Transform(dict):
    """Mapping space name -> GroupElement; spaces left out are the identity."""

    def compose(self, first: Transform, spec: SymmetrySpec) -> Transform:
        """self ∘ first: the transform that applies `first`, then self."""
        out = Transform()
        for name in set(self) | set(first):
            space = spec.spaces[name]
            a, b = self.get(name), first.get(name)
            if b is not None and space.batched_by in self:
                b = b.select(self[space.batched_by].perm)
            out[name] = b if a is None else (a if b is None else a.compose(b))
        return out

    def inverse(self, spec: SymmetrySpec) -> Transform:
        out = Transform()
        for name, element in self.items():
            inv = element.inverse()
            parent = spec.spaces[name].batched_by
            if parent in self:
                inv = inv.select(torch.argsort(self[parent].perm))
            out[name] = inv
        return out

    def classes(self) -> dict[str, str]:
        return {name: element.kind for name, element in self.items()}

    def to(self, device: torch.device | str) -> Transform:
        return Transform({name: element.to(device) for name, element in self.items()})

    def save(self, path: str | Path, metadata: Mapping[str, str] | None = None,
             start: Transform | None = None) -> None:
        """One safetensors file; a learned alignment also keeps the transform it started from
        (under the prefix `start/`), so its corrections can be analysed later (`symalign spectrum`)."""
        tensors = {f"{name}|{key}": t.detach().cpu().contiguous()
                   for name, el in self.items() for key, t in el.tensors().items()}
        meta = {"format": FORMAT, "kinds": json.dumps(self.classes())}
        if start is not None:
            tensors.update({f"{START}{name}|{key}": t.detach().cpu().contiguous()
                            for name, el in start.items() for key, t in el.tensors().items()})
            meta["start_kinds"] = json.dumps(start.classes())
        meta.update(metadata or {})
        save_file(tensors, str(path), metadata=meta)

    @classmethod
    def load(cls, path: str | Path) -> Transform:
        return load_transforms(path)[0]


def load_transforms(path: str | Path) -> tuple[Transform, Transform | None]:
    """The transform in a file and the one it started from (None unless a learned matcher wrote it)."""
    path = Path(path)
    if not path.is_file():
        raise SymalignError(f"no transform file at {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        raw = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise SymalignError(f"{path} is not a readable safetensors file ({exc})") from None
    if meta.get("format") != FORMAT:
        raise SymalignError(f"{path} is not a symalign transform file (format {meta.get('format')!r})")
    try:
        parts: dict[str, dict[str, torch.Tensor]] = {}
        for key, t in raw.items():
            name, field = key.split("|")
            parts.setdefault(name, {})[field] = t

        def build(kinds: dict[str, str], prefix: str) -> Transform:
            return Transform({name: element_from_tensors(kind, parts[prefix + name]) for name, kind in kinds.items()})

        transform = build(json.loads(meta["kinds"]), "")
        start = build(json.loads(meta["start_kinds"]), START) if "start_kinds" in meta else None
    except (KeyError, ValueError, TypeError) as exc:
        raise SymalignError(f"{path} is a damaged symalign transform file ({type(exc).__name__}: {exc})") from None
    return transform, start


def validate(transform: Transform, spec: SymmetrySpec, atol: float = 1e-4) -> None:
    """Refuse elements of the wrong size or of a class the spec does not admit (with its reason)."""
    for name, element in transform.items():
        space = spec.spaces.get(name)
        if space is None:
            raise InadmissibleError(f"this {spec.family} model has no component {name!r}")
        space.require(element.kind)
        if element.size != space.size or (element.batch or 1) != space.count:
            raise InadmissibleError(
                f"{name}: element of size {element.size}×{element.batch or 1} does not fit a space of "
                f"size {space.size}×{space.count}"
            )
        if isinstance(element, ScaledPermutation) and not bool((element.scale > 0).all()):
            raise InadmissibleError(f"{name}: scaled permutations need positive scales")
        if isinstance(element, Dense):
            _check_dense(name, element, space, atol)


def _check_dense(name: str, element: Dense, space, atol: float) -> None:
    m = element.dense()
    eye = torch.eye(m.shape[-1], dtype=m.dtype).expand_as(m)
    if element.kind == "orthogonal" and (m @ m.mT - eye).abs().max() > atol:
        raise InadmissibleError(f"{name}: the 'orthogonal' element is not orthogonal")
    if element.kind == "orthogonal+rescale":
        gram = m @ m.mT  # s²·I for a rotation times a scalar s
        if (gram - gram[..., :1, :1] * eye).abs().max() > atol * max(1.0, float(gram.abs().max())):
            raise InadmissibleError(f"{name}: an 'orthogonal+rescale' element must be a rotation times a scalar")
    if element.kind == "rescale" and (m - m[..., :1, :1] * eye).abs().max() > atol:
        raise InadmissibleError(f"{name}: a rescaling must be a multiple of the identity")
    if element.kind == "rotary":
        if space.rotated_dims % 2:
            raise InadmissibleError(f"{name}: a rotary map needs an even number of rotated dimensions "
                                    "(frequency pairs)")
        r = space.rotated_dims
        free = m[..., r:, r:]
        if (m - rotary_matrix(*rotary_parts(m, r), free)).abs().max() > atol * max(1.0, float(m.abs().max())):
            raise InadmissibleError(f"{name}: a rotary map must be a 2×2 rotation and scale per frequency pair"
                                    + (f" on the first {r} dimensions, apart from the rest" if r < m.shape[-1] else ""))
        if free.numel() and (free @ free.mT - torch.eye(free.shape[-1], dtype=m.dtype)).abs().max() > atol:
            raise InadmissibleError(f"{name}: a rotary map's block on the dimensions RoPE leaves alone "
                                    "must be orthogonal")
    if element.kind == "perm" and ((m - m.round()).abs().max() > atol or ((m.round() != 0) & (m.round() != 1)).any()):
        raise InadmissibleError(f"{name}: per-head permutations must be permutation matrices")
    if space.fixes_ones and element.kind == "orthogonal":
        ones = torch.ones(m.shape[-1], dtype=m.dtype)
        if (m @ ones - ones).abs().max() > atol * m.shape[-1] ** 0.5:
            raise InadmissibleError(
                f"{name}: a residual orthogonal map must fix the all-ones vector (Q·1 = 1) "
                "so that it commutes with LayerNorm's mean-centring"
            )

def apply(tensors: Mapping[str, torch.Tensor], spec: SymmetrySpec, transform: Transform,
          consume: bool = False) -> dict[str, torch.Tensor]:
    """The tensors of the same function expressed in the transformed basis (validated first)."""
    validate(transform, spec)
    missing = set(spec.tensors) - set(tensors)
    if missing:
        raise SymalignError(f"tensors missing for {spec.family}: {sorted(missing)[:5]}")
    return apply_unchecked(tensors, spec, transform, consume)


def apply_unchecked(tensors: Mapping[str, torch.Tensor], spec: SymmetrySpec, transform: Transform,
                    consume: bool = False) -> dict[str, torch.Tensor]:
    """One loop for every architecture, on any subset of tensors: each tagged axis gets its
    space's element, whole-unit permutations first so per-head maps see heads in their new order.
    `consume`: `tensors` (a dict) is emptied as it goes, each input let go once its successor exists
    (a real checkpoint's input and output never exist whole side by side)."""
    out = {}
    for name in list(tensors):
        t = tensors.pop(name) if consume else tensors[name]
        tags = spec.tensors[name]
        order = sorted(range(len(tags)),
                       key=lambda ax: tags[ax] is not None and spec.spaces[tags[ax].space].batched_by is not None)
        for axis in order:
            tag = tags[axis]
            if tag is None or tag.space not in transform:
                continue
            parent = spec.spaces[tag.space].batched_by
            batch_axis = next(i for i,
                              tg in enumerate(tags) if tg is not None and tg.space == parent) if parent else None
            t = transform[tag.space].act(t, axis, tag.variance, batch_axis)
        out[name] = t
    return out
