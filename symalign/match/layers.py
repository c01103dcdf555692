"""Which blocks a matcher may transform (`--layers`): the spaces of the other blocks stay at the
identity, so "skip these layers" and single-layer or last-layers matching (Zhang et al. §5.6) can be
asked for, for every component at once (`0-2`) or per component kind (`mlp=0-1;heads=-1`: the kinds
not named use every block). The residual stream is one basis shared by every block: a map of it moves all blocks at
once, so it cannot be restricted to some of them (a preset drops it; asking for it is refused)."""

from __future__ import annotations

import re

from symalign.errors import SymalignError

_LAYER_SPACE = re.compile(r"^layer\.(\d+)\.")
SYNTAX = "blocks such as 0-2, 3, -1 (the last), 1: (all but the first), :-1 (all but the last) or 0,2"


def _index(text: str, n: int, where: str) -> int:
    try:
        i = int(text)
    except ValueError:
        raise SymalignError(f"{where}: {text!r} is not a block number; use {SYNTAX}") from None
    if not -n <= i < n:
        raise SymalignError(f"{where}: block {i} does not exist (the model has {n} blocks: 0-{n - 1})")
    return i % n


def parse_layers(text: str, n: int, where: str = "--layers") -> list[int]:
    """The block indices `text` names, in order, for a model of `n` blocks; one line for a bad text."""
    chosen: set[int] = set()
    for item in (t.strip() for t in str(text).split(",")):
        if ":" in item:
            chosen.update(_slice(item, n, where))
        elif re.fullmatch(r"\d+\s*-\s*\d+", item):
            first, last = (_index(x, n, where) for x in item.split("-"))
            if first > last:
                raise SymalignError(f"{where}: the range {item!r} runs backwards")
            chosen.update(range(first, last + 1))
        else:
            chosen.add(_index(item, n, where))
    if not chosen:
        raise SymalignError(f"{where}: {text!r} names no block of the model's {n}")
    return sorted(chosen)


def _slice(item: str, n: int, where: str) -> range:
    """`a:b`, `a:` or `:b`, as Python slices the blocks."""
    start, _, stop = (part.strip() for part in item.partition(":"))
    if not all(re.fullmatch(r"-?\d*", part) for part in (start, stop)):
        raise SymalignError(f"{where}: {item!r} is not a block range; use {SYNTAX}")
    return range(n)[slice(int(start) if start else None, int(stop) if stop else None)]


def block_count(spec) -> int:
    """How many blocks the spec's per-layer spaces span."""
    found = [int(m.group(1)) for name in spec.spaces if (m := _LAYER_SPACE.match(name))]
    return max(found) + 1 if found else 0


def layer_selection(text: str, n: int) -> dict[str | None, set[int]]:
    """`--layers` as blocks per component kind (key None: every kind not named). Entries are separated
    by `;`; `KIND=BLOCKS` restricts one kind (mlp, heads, qk, vo), a bare BLOCKS every kind."""
    from symalign.symmetry.spec import KINDS

    per_kind: dict[str | None, set[int]] = {}
    for entry in (e.strip() for e in str(text).split(";") if e.strip()):
        kind, eq, blocks = entry.partition("=")
        kind, blocks = (kind.strip(), blocks) if eq else (None, entry)
        if kind is not None and (kind not in KINDS or kind == "residual"):
            raise SymalignError(f"--layers {text}: {kind!r} is not a per-block component; name one of "
                                f"{', '.join(k for k in KINDS if k != 'residual')} (KIND=BLOCKS), or give blocks alone")
        if kind in per_kind:
            raise SymalignError(f"--layers {text}: {'every kind' if kind is None else kind} is given blocks twice")
        per_kind[kind] = set(parse_layers(blocks, n, f"--layers {entry}"))
    if not per_kind:
        raise SymalignError(f"--layers: {text!r} names no block; use {SYNTAX}")
    return per_kind


def frozen_spaces(spec, text: str | None) -> frozenset[str]:
    """The spaces a matcher must leave at the identity: every per-layer space outside the blocks chosen
    for its kind (none without `text`)."""
    if not text:
        return frozenset()
    n = block_count(spec)
    chosen = layer_selection(text, n)
    every = chosen.get(None, set(range(n)))
    return frozenset(name for name, space in spec.spaces.items()
                     if (m := _LAYER_SPACE.match(name)) and int(m.group(1)) not in chosen.get(space.kind, every))


def classes_for_layers(classes: dict[str, str], text: str | None, preset: bool) -> dict[str, str]:
    """The classes with a block subset: a preset's residual map is dropped (it would move every block);
    a residual map asked for by name is refused in one line."""
    if not text or classes.get("residual", "none") == "none":
        return classes
    if preset:
        return {**classes, "residual": "none"}
    raise SymalignError(f"--layers {text}: the residual stream is one basis for every block, so a residual map "
                        f"moves all of them; use --residual none with --layers (a preset such as --classes all "
                        f"drops it by itself)")
