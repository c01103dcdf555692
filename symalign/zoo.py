"""The shipped model zoo: assets/zoo/RECIPE/SEED directories and a manifest recording how each
was made (exact command) and what it scores (evaluation metrics), with file hashes.

This is the zoo's read side, low in the package (models resolve zoo:RECIPE/SEED through it); the
side that trains it lives in symalign.train.loop."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from symalign.errors import SymalignError

PREFIX = "zoo:"


def zoo_dir() -> Path:
    """assets/zoo in the source checkout, or $SYMALIGN_ZOO."""
    env = os.environ.get("SYMALIGN_ZOO")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "assets" / "zoo"


def inside_zoo(path: str | Path) -> bool:
    """Whether writing to `path` would write into the shipped zoo (only `symalign zoo build` trains into it)."""
    path, zoo = Path(path).expanduser().resolve(), zoo_dir().resolve()
    return path == zoo or zoo in path.parents


def manifest() -> dict:
    path = zoo_dir() / "manifest.json"
    if not path.is_file():
        return {"models": []}
    return json.loads(path.read_text())


def file_hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def resolve_zoo(reference: str) -> Path:
    """zoo:RECIPE/SEED -> its directory, or a clear error listing what the zoo holds."""
    name = reference[len(PREFIX):]
    recipe, _, seed = name.partition("/")
    entries = manifest()["models"]
    known = [f"{PREFIX}{e['recipe']}/{e['seed']}" for e in entries]
    match = [e for e in entries if e["recipe"] == recipe and str(e["seed"]) == seed]
    if not match:
        raise SymalignError(f"no zoo model {reference!r}; the zoo holds: {', '.join(known) or 'nothing'}")
    return zoo_dir() / match[0]["path"]


def zoo_reference(path: str | Path) -> str:
    """The short zoo:RECIPE/SEED name of a shipped model's directory; any other path unchanged."""
    try:
        relative = Path(path).resolve().relative_to(zoo_dir().resolve()).as_posix()
    except ValueError:
        return str(path)
    match = [e for e in manifest()["models"] if e["path"] == relative]
    return f"{PREFIX}{match[0]['recipe']}/{match[0]['seed']}" if match else str(path)


def add_entry(record: dict, folder: Path) -> None:
    """Record a trained model in the manifest (replacing an older entry of the same recipe/seed)."""
    data = manifest()
    entry = dict(record, path=str(folder.relative_to(zoo_dir())), files=file_hashes(folder))
    data["models"] = [e for e in data["models"] if (e["recipe"], e["seed"]) != (record["recipe"], record["seed"])]
    data["models"].append(entry)
    data["models"].sort(key=lambda e: (e["recipe"], e["seed"]))
    (zoo_dir() / "manifest.json").write_text(json.dumps(data, indent=2) + "\n")
