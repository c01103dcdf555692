"""JSON files that users hand over (a model folder's training.json, an alignment's alignment.json, a
curve's curve.json, a tokenizer_config.json): read to one clear error, never a traceback.

A folder copied by hand, cut short by a full disk or edited can hold anything in those files; a
bare `json.loads(path.read_text())` then ended in a UnicodeDecodeError or, for valid JSON of the
wrong shape (a list, a number), an AttributeError at the first `.get`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from symalign.errors import SymalignError


def read_json(path: Path, error: type[SymalignError] = SymalignError) -> Any:
    """The JSON value in `path`, or `error` naming the file and what is wrong with it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise error(f"{path} is not valid JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise error(f"{path} is not valid JSON ({exc})") from None
    except OSError as exc:
        raise error(f"{path} cannot be read ({exc.strerror or exc})") from None


def read_json_object(path: Path, error: type[SymalignError] = SymalignError) -> dict:
    """A JSON file that must hold an object (a table of keys), as every record symalign writes does."""
    value = read_json(path, error)
    if not isinstance(value, dict):
        raise error(f"{path} holds a JSON {type(value).__name__}, not the object of keys expected here")
    return value
