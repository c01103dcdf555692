"""Where symalign keeps a user's things: the run database, run artifacts and imported models.

One folder, chosen once: `$SYMALIGN_HOME`, else `$XDG_DATA_HOME/symalign`, else
`~/.local/share/symalign`. The CLI and the app read the same folder, so a run made with one
shows up in the other."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from symalign.errors import SymalignError


def home() -> Path:
    """The data folder (created on first use)."""
    explicit = os.environ.get("SYMALIGN_HOME")
    if explicit:
        root = Path(explicit).expanduser()
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        root = (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share") / "symalign"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SymalignError(f"cannot create the symalign data folder {root} ({exc.strerror}); "
                            "set SYMALIGN_HOME to a writable folder") from None
    return root


def models_dir() -> Path:
    """Models imported (uploaded) or trained in the app: one Hugging Face directory each."""
    path = home() / "models"
    path.mkdir(exist_ok=True)
    return path


def runs_dir() -> Path:
    """Artifacts of runs the app makes (aligned checkpoints, transforms), one folder per run id."""
    path = home() / "runs"
    path.mkdir(exist_ok=True)
    return path


@dataclass(frozen=True)
class ModelEntry:
    """One model a user can pick: a label for menus and the reference every loader accepts."""

    label: str
    ref: str
    origin: str  # zoo | yours | linked


def _linked_file() -> Path:
    return home() / "linked_models.json"


def linked_paths() -> list[str]:
    """Local directories the user pointed the app at (big checkpoints are linked, not copied)."""
    path = _linked_file()
    if not path.is_file():
        return []
    try:
        return [str(p) for p in json.loads(path.read_text())]
    except (ValueError, TypeError):
        return []


def link_path(directory: str) -> None:
    paths = linked_paths()
    if directory not in paths:
        _linked_file().write_text(json.dumps(paths + [directory], indent=2))


def unlink_path(directory: str) -> None:
    _linked_file().write_text(json.dumps([p for p in linked_paths() if p != directory], indent=2))


def available_models() -> list[ModelEntry]:
    """Shipped zoo models, then the user's imported/trained models, then linked directories."""
    from symalign.zoo import manifest

    entries = [ModelEntry(f"zoo:{m['recipe']}/{m['seed']}", f"zoo:{m['recipe']}/{m['seed']}", "zoo")
               for m in manifest()["models"]]
    for folder in sorted(models_dir().iterdir()):
        if (folder / "config.json").is_file():
            entries.append(ModelEntry(f"yours: {folder.name}", str(folder), "yours"))
    from symalign.models.hub import is_hub_id

    for path in linked_paths():
        hub = is_hub_id(path) and not Path(path).expanduser().exists()  # a local directory of that name wins
        entries.append(ModelEntry(f"hub: {path}" if hub else f"linked: {path}", path, "hub" if hub else "linked"))
    return entries
