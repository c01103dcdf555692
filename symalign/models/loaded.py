"""Small checkpoints loaded recently, kept per process.

A sweep, a report or an app session loads the same zoo model hundreds of times, and transformers'
from_pretrained costs tens of milliseconds a call even for a model of kilobytes (the report's quick check
loaded 236 models in 12 s). A checkpoint is known again by every file of its directory (name, size,
modification and change time, inode), so one overwritten in place is read again. Each caller gets its own
copy of the config and tensors: a workflow that consumes or changes what it was given cannot reach the
kept model. Large checkpoints are never kept: memory, not load time, is what limits those."""

from __future__ import annotations

import contextlib
import copy
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from symalign.models.canonical import carry_verified, is_canonical
from symalign.models.family import TransformerModel

MAX_MODEL_BYTES = 64 << 20  # stored bytes of a checkpoint's files; above it a model is loaded every time
MAX_TOTAL_BYTES = 256 << 20  # float32 bytes of all kept models together; the least recently used go first

Fingerprint = tuple


def fingerprint(path: Path) -> Fingerprint | None:
    """What identifies the checkpoint in `path` now, or None where it is not to be kept (too large, unreadable)."""
    try:
        files = sorted((p.name, p.stat()) for p in path.iterdir() if p.is_file())
        where = str(path.resolve())
    except OSError:
        return None
    if sum(s.st_size for _, s in files) > MAX_MODEL_BYTES:
        return None
    return (where, *((name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for name, s in files))


def copy_of(model: TransformerModel) -> TransformerModel:
    """A model nobody else holds: its own config and tensors (and, bit for bit the same, the kept model's
    canonical-form verdict: a sweep's cells load the same zoo model hundreds of times)."""
    copied = model.with_tensors({k: v.clone() for k, v in model.tensors.items()}, config=copy.deepcopy(model.config))
    carry_verified(model, copied)
    return copied


def float_bytes(model: TransformerModel) -> int:
    return sum(t.numel() * t.element_size() for t in model.tensors.values())


class LoadedModels:
    """Least-recently-used models by fingerprint, safe to share between an app's threads."""

    def __init__(self, max_total_bytes: int = MAX_TOTAL_BYTES) -> None:
        self.max_total_bytes = max_total_bytes
        self._models: OrderedDict[Fingerprint, TransformerModel] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path, load: Callable[[], TransformerModel]) -> TransformerModel:
        """The model in `path`: a copy of the kept one when the directory is unchanged, else `load()`'s."""
        key = fingerprint(path)
        if key is None:
            return load()
        with self._lock:
            kept = self._models.get(key)
            if kept is not None:
                self._models.move_to_end(key)
        if kept is not None:
            return copy_of(kept)
        model = load()
        if float_bytes(model) <= self.max_total_bytes:
            kept = copy_of(model)
            # checked once here (kept with the model): every copy handed out carries the verdict. Only a shortcut:
            # a model the check cannot read (an upload with missing tensors) is loaded as before, its error later
            with contextlib.suppress(Exception):
                is_canonical(kept)
            carry_verified(kept, model)
            with self._lock:
                self._models[key] = kept
                while sum(float_bytes(m) for m in self._models.values()) > self.max_total_bytes:
                    self._models.popitem(last=False)
        return model

    def __len__(self) -> int:
        return len(self._models)


LOADED = LoadedModels()
