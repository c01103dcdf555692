"""Identical requests are computed once: a request whose models (by content), settings and seed
match one already answered is answered with the runs recorded then, and identical requests that
arrive together wait for the first one's computation instead of repeating it.

Why: a room of browsers clicking the same guided demo would otherwise run the same seeded
computation once per visitor on the same cores (four visitors waited 145 s each where one alone
waits 40 s). Every computation here is seeded, so equal keys give equal numbers; the key names
the models by the hash of their files, so a checkpoint retrained under the same path is not
mistaken for the old one. The lock is a file lock beside the run database, so it holds between
the app's sessions (threads) and its job worker (another process) alike."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from symalign.models.family import TransformerModel
from symalign.runs.store import RunStore

_hashes: dict[tuple[str, int, int], str] = {}  # (file, size, mtime) -> sha256: a model is hashed once per change


def _file_hash(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
        _hashes[key] = digest.hexdigest()
    return _hashes[key]


def fingerprint(model: TransformerModel | str | Path) -> str | None:
    """A hash of what a model computes from: its directory's config and weight files. None for a
    model that lives only in memory (nothing on disk says what it is, so it is never reused)."""
    if isinstance(model, TransformerModel):
        if not model.source:
            return None
        model = model.source
    from symalign.models.io import resolve

    folder = resolve(model)
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and (p.suffix == ".safetensors" or p.name == "config.json"))
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}:{_file_hash(path)};".encode())
    return digest.hexdigest()


def request_key(what: str, models: list, settings: dict) -> str | None:
    """The key of a request: what is asked, of which models (by content), with which settings.
    None when a model cannot be named by content (such a request is always computed)."""
    prints = [fingerprint(m) for m in models]
    if any(p is None for p in prints):
        return None
    text = json.dumps({"what": what, "models": prints, "settings": settings}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def served_once(store: RunStore | None, key: str | None,
                compute: Callable[[], list[str | None]]) -> tuple[list[str | None], bool]:
    """The runs answering a request, and whether they were recalled rather than computed. Under the
    request's lock: recall an earlier answer whose runs are all still there and done, else compute
    and remember. Without a store or a key, just compute."""
    if store is None or key is None:
        return compute(), False
    locks = store.path.parent / "locks"
    locks.mkdir(exist_ok=True)
    with FileLock(str(locks / f"{key}.lock")):
        found = store.recall(key)
        if found is not None:
            return found, True
        ids = compute()
        if all(ids):
            store.remember(key, [str(i) for i in ids])
        return ids, False


def answered(store: RunStore | None, reuse: bool, what: str, models: list, settings: dict,
             compute: Callable[[], list[str | None]]) -> list[str | None]:
    """The run ids answering a workflow's request: served once (`served_once`) when `reuse` is asked
    and there is a store to remember in, else computed. The models are hashed only then."""
    key = request_key(what, models, settings) if reuse and store is not None else None
    return served_once(store, key, compute)[0]
