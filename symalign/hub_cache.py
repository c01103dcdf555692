"""Where the Hugging Face hub cache is and whether the network may be used, as the environment says
now: huggingface_hub fixes its own constants at import, so a process, a test or the app that points
HF_HUB_CACHE / HF_HOME elsewhere or sets HF_HUB_OFFLINE later would not be seen. Models
(symalign.models.hub) and data sets (symalign.data.hub) read both through here."""

from __future__ import annotations

import os
from pathlib import Path


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps snapshots."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
