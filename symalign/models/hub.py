"""Hub ids (`org/name`, `org/name@revision`) resolved to a local snapshot folder through
huggingface_hub: downloaded when online, read from the cache when `HF_HUB_OFFLINE=1`.

The cache location and the offline switch are read from the environment at each call (not
at import, as huggingface_hub's constants are), so a process, a test or the app can point at
another cache without restarting. Only the files a model needs are fetched: configs,
safetensors weights, tokenizer and image-processor files (never pickles when safetensors exist)."""

from __future__ import annotations

import re
from pathlib import Path

from symalign.errors import ModelLoadError, brief
from symalign.hub_cache import hub_cache_dir, offline

# org/name with an optional @revision; names as the hub allows them (letters, digits, - _ .).
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<revision>[\w./-]+))?$")
WANTED = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"]  # txt: vocab/merges; model: sentencepiece


def is_hub_id(reference: str) -> bool:
    """Does `reference` read as a hub id? (A local path of that name is checked first by callers.)"""
    return bool(HUB_ID.match(reference)) and not reference.startswith((".", "/", "~"))


def split_hub_id(reference: str) -> tuple[str, str | None]:
    match = HUB_ID.match(reference)
    if match is None:
        raise ModelLoadError(f"{reference!r} is not a hub id (expected org/name or org/name@revision)")
    return match["repo"], match["revision"]


def resolve_hub_id(reference: str) -> Path:
    """The snapshot folder of a hub id, or one ModelLoadError line that says what is missing."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo, revision = split_hub_id(reference)
    cache = hub_cache_dir()
    shown = f"{repo}@{revision}" if revision else repo
    try:
        folder = snapshot_download(repo, revision=revision, cache_dir=str(cache), local_files_only=offline(),
                                   allow_patterns=WANTED)
    except RevisionNotFoundError:
        raise ModelLoadError(f"{repo} has no revision {revision!r}") from None
    except (RepositoryNotFoundError, GatedRepoError) as exc:
        raise ModelLoadError(f"no model {repo} on the hub (or it needs a token: {brief(exc, 80)})") from None
    except LocalEntryNotFoundError:
        where = f"in the cache at {cache}"
        if revision and (cache / f"models--{repo.replace('/', '--')}").is_dir():
            raise ModelLoadError(f"{repo} is cached at {cache} but not its revision {revision!r}") from None
        hint = " (HF_HUB_OFFLINE is set: nothing is downloaded)" if offline() else " and the hub could not be reached"
        raise ModelLoadError(f"no model {shown}: not a local directory, not {where}{hint}") from None
    except HFValidationError as exc:
        raise ModelLoadError(f"{reference!r} is not a valid hub id ({brief(exc, 120)})") from None
    except Exception as exc:  # network errors take many types
        raise ModelLoadError(f"could not fetch {shown} from the hub ({brief(exc)})") from None
    path = Path(folder)
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{shown} ({path}) has no config.json: not a transformers model")
    return path
