"""A sweep file read to its table of keys, or one line saying why it cannot be (missing, a folder, not
UTF-8, not valid TOML, YAML or JSON, not a table); symalign.sweeps.grid makes the grid of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from symalign.errors import SymalignError


def read_sweep_file(path: str | Path) -> dict[str, Any]:
    """The table of keys in a sweep file: TOML (.toml), YAML (.yaml, .yml) or JSON (.json)."""
    path = Path(path)
    if path.is_dir():
        raise SymalignError(f"{path} is a folder; name the sweep file in it (.toml, .yaml or .json)")
    if not path.is_file():
        raise SymalignError(f"no sweep file {path}")
    if path.suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise SymalignError(f"{path}: a sweep file ends in .toml, .yaml, .yml or .json")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SymalignError(f"{path} is not a valid sweep file (not UTF-8 text)") from None
    try:
        if path.suffix == ".toml":
            try:
                import tomllib
            except ImportError:  # Python 3.10: the tomli backport (a dependency there)
                import tomli as tomllib

            spec = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            import yaml

            spec = yaml.safe_load(text)
        else:
            spec = json.loads(text)
    except ImportError as exc:  # PyYAML is optional; tomli is a dependency on Python 3.10, but may be missing
        if exc.name == "tomli":
            raise SymalignError("reading TOML on Python 3.10 needs tomli (pip install tomli); or write the sweep file "
                                "as JSON") from None
        raise SymalignError("reading YAML needs PyYAML (pip install pyyaml); or write the sweep file as TOML") from None
    except Exception as exc:  # each parser has its own error type; all mean "not a valid file"
        raise SymalignError(f"{path} is not a valid sweep file ({' '.join(str(exc).split())})") from None
    if not isinstance(spec, dict):
        raise SymalignError(f"{path}: a sweep file is a table of keys (models, rows, seeds, ...)")
    return spec
