"""The folder a command writes (`--out`, `--canonical-a`), checked before any work.

Two mistakes lost data or work: `align A B --out assets/zoo/vit-digits/1` replaced a shipped model with the
aligned copy (and the manifest's hashes then failed), and an `--out` that names a file, or a place that cannot
be created, raised a traceback from `mkdir` after the alignment had been computed. Writing into a folder a
command reads its models from replaces that model the same way."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from symalign.errors import SymalignError
from symalign.zoo import PREFIX, inside_zoo, zoo_dir


def check_output_folder(out: str | Path, flag: str = "--out", inputs: Iterable[str] = ()) -> None:
    """One line, before any work, for an output folder that would replace a shipped model or one of the run's
    own inputs (`inputs`: model references; local folders among them), that is a file, or that cannot be made."""
    path = Path(out).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise SymalignError(f"{flag} {out} is a file: name a folder (it is created if missing)")
    if inside_zoo(path):
        raise SymalignError(f"{flag} {out} is inside the shipped zoo ({zoo_dir()}): writing there would replace a "
                            "shipped model; name another folder")
    for ref in inputs:
        if ref.startswith(PREFIX):
            continue  # in the zoo: refused above
        source = Path(ref).expanduser()
        if source.is_dir() and source.resolve() == path:
            raise SymalignError(f"{flag} {out} is the folder model {ref} is read from: writing there would replace "
                                "it; name another folder")
    parent = next(p for p in (path, *path.parents) if p.exists())  # the nearest folder that is already there
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise SymalignError(f"{flag} {out} cannot be created: {parent} is not a writable folder")
