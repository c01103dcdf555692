"""A family's weight names as data: one row per logical tensor, read both ways by one code path.

Each row names a Hugging Face tensor (a template with `{i}` for the layer), how its axes become the
logical layout (an einops-style pattern such as "(kv g dh) d -> kv g dh d", with "d (three h dh)"
for a Conv1D's [in, out] fused q|k|v), and, for a fused tensor, which part is this row's: `part=j`
takes element j of the pattern's first output axis (equal parts: GPT-2's c_attn, GPT-NeoX's per-head
q|k|v, Phi-3's gate|up), `split` cuts the Hugging Face tensor's first axis into parts of declared
sizes first (unequal parts: Phi-3's q|k|v with fewer key/value heads). The inverse is the same
row read backwards (the pattern's sides swapped, parts stacked or joined in order), so a family
no longer writes `from_logical` by hand: mergekit's idea of an architecture as a JSON of weight-name
templates, with the reshapes symalign's logical layout needs.

Sizes in patterns and splits are the names `sizes(dims)` gives: d (width), h (query heads), kv
(key/value heads), g (query heads per key/value head), dh (head size), m (MLP units)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch

from symalign.models.layout import Dims, layer_name

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Row:
    """One logical tensor: `logical` is layer-local ("attn.q.weight") when `hf` holds `{i}`."""

    logical: str
    hf: str
    pattern: str = ""
    part: int | None = None
    split: tuple[str, ...] = ()  # sizes of the parts of the Hugging Face tensor's first axis (expressions)
    fallback: str = ""  # read instead when `hf` is absent (a tied head saved without its own weight)

    @property
    def per_layer(self) -> bool:
        return "{i}" in self.hf


def sizes(dims: Dims) -> dict[str, int]:
    """The names patterns may use, read from a family's Dims."""
    return {"d": dims.d_model, "h": dims.n_head, "kv": dims.kv_heads, "g": dims.group, "dh": dims.d_head,
            "m": dims.d_mlp}


def _side(text: str) -> list[list[str]]:
    """'(kv g dh) d' -> [['kv', 'g', 'dh'], ['d']]."""
    groups = re.findall(r"\(([^)]*)\)|(\S+)", text)
    return [inner.split() if inner or not plain else [plain] for inner, plain in groups]


def rearrange(x: torch.Tensor, pattern: str, known: dict[str, int]) -> torch.Tensor:
    """Reshape and transpose `x` by an einops-style pattern with groupings on either side (no
    repeats, no reductions): the one operation a layout row needs, in both directions."""
    left, right = (_side(s) for s in pattern.split("->"))
    if len(left) != x.dim():
        raise ValueError(f"pattern {pattern!r} expects {len(left)} axes, the tensor has {x.dim()} {tuple(x.shape)}")
    size = dict(known)
    for group, n in zip(left, x.shape):
        unknown = [a for a in group if a not in size]
        product = math.prod(size.get(a, 1) for a in group)
        if len(unknown) > 1 or n % product:
            raise ValueError(f"pattern {pattern!r}: axis {group} of size {n} does not split by {known}")
        if unknown:
            size[unknown[0]] = n // product
        elif product != n:
            raise ValueError(f"pattern {pattern!r}: axis {group} has size {n}, not {product}")
    flat_left = [a for g in left for a in g]
    flat_right = [a for g in right for a in g]
    if sorted(flat_left) != sorted(flat_right):
        raise ValueError(f"pattern {pattern!r} names different axes on its two sides")
    x = x.reshape([size[a] for a in flat_left]).permute([flat_left.index(a) for a in flat_right])
    return x.reshape([math.prod(size[a] for a in group) for group in right])


def _reverse(pattern: str) -> str:
    left, right = pattern.split("->")
    return f"{right.strip()} -> {left.strip()}"


def _value(expr: str, known: dict[str, int]) -> int:
    """A size expression such as 'h*dh' or 'kv*dh'."""
    return math.prod(int(f) if f.strip().isdigit() else known[f.strip()] for f in expr.split("*"))


def _names(row: Row, n_layer: int) -> Iterable[tuple[str, str]]:
    """(logical, Hugging Face) names of a row, one per layer when it is per-layer."""
    if row.per_layer:
        for i in range(n_layer):
            yield layer_name(i, row.logical), row.hf.format(i=i)
    else:
        yield row.logical, row.hf


def to_logical(rows: Iterable[Row], sd: Tensors, dims: Dims) -> Tensors:
    """The logical tensors of a Hugging Face state dict (every row's tensor must be there: a family's
    `rows_of(config)` lists only the biases and norms its config has)."""
    known = sizes(dims)
    return {logical: read_row(row, hf, sd, known) for logical, (row, hf) in logical_rows(rows, dims.n_layer).items()}


def logical_rows(rows: Iterable[Row], n_layer: int) -> dict[str, tuple[Row, str]]:
    """Per logical tensor, the row that reads it and its Hugging Face name (this layer's)."""
    return {logical: (row, hf) for row in rows for logical, hf in _names(row, n_layer)}


def read_row(row: Row, hf: str, sd: Mapping[str, torch.Tensor], known: dict[str, int]) -> torch.Tensor:
    """One logical tensor from a state dict (a lazy one too: only `hf`, or the row's fallback, is read)."""
    x = sd[row.fallback] if row.fallback and hf not in sd else sd[hf]
    if row.split:
        bounds = [_value(e, known) for e in row.split]
        x = x.split(bounds, dim=0)[row.part]
    if row.pattern:
        x = rearrange(x, row.pattern, known)
    if row.part is not None and not row.split:
        x = x[row.part]
    return x.contiguous()


def from_logical(rows: Iterable[Row], t: Tensors, dims: Dims) -> Tensors:
    """The Hugging Face state dict of logical tensors: each row read backwards, fused parts joined in
    part order (logical tensors the rows do not name are left out)."""
    known, sd, parts = sizes(dims), {}, {}
    for row in rows:
        for logical, hf in _names(row, dims.n_layer):
            if logical not in t:
                continue
            if row.part is None:
                sd[hf] = rearrange(t[logical], _reverse(row.pattern), known) if row.pattern else t[logical]
            else:
                parts.setdefault(hf, []).append((row, t[logical]))
    for hf, found in parts.items():
        found.sort(key=lambda rt: rt[0].part)
        row = found[0][0]
        if row.split:
            sd[hf] = torch.cat([rearrange(x, _reverse(r.pattern), known) if r.pattern else x for r, x in found])
        else:
            sd[hf] = rearrange(torch.stack([x for _, x in found]), _reverse(row.pattern), known)
    return sd


def adapters(rows_of: Callable[[object], list[Row]], dims_of: Callable[[object], Dims],
             check: Callable[[Tensors, object], None] | None = None):
    """A Family's (to_logical, from_logical) pair from its rows: `rows_of(config)` may vary with the
    config (biases, tied heads), `check(t, config)` runs before writing (a tied head still tied)."""
    def read(sd: Tensors, config) -> Tensors:
        return to_logical(rows_of(config), sd, dims_of(config))

    def write(t: Tensors, config) -> Tensors:
        if check is not None:
            check(t, config)
        return from_logical(rows_of(config), t, dims_of(config))

    return read, write


def layout_table(family, config) -> list[dict]:
    """The family's weight map for `symalign inspect --layout`: per row its Hugging Face name, reshape,
    fused part, logical name ({i} for every layer) and the tag of each logical axis; [] for a family
    whose adapters are still written by hand."""
    if family.weight_map is None:
        return []
    tags = family.spec(config, canonical=False).tensors
    out = []
    for row in family.weight_map(config):
        logical = layer_name(0, row.logical) if row.per_layer else row.logical
        axes = [None if t is None else f"{t.space.split('.')[-1]}:{t.variance}" for t in tags.get(logical, ())]
        part = "" if row.part is None else (f"part {row.part} of {'|'.join(row.split)}" if row.split
                                             else f"part {row.part}")
        out.append({"hf": row.hf, "pattern": row.pattern, "part": part, "fallback": row.fallback,
                    "logical": f"layer.{{i}}.{row.logical}" if row.per_layer else row.logical, "tags": axes})
    return out
