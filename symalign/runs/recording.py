"""The run history's side of a workflow: a run row written when the work starts and its metrics
(or one line of error) when it ends, and how the history names the models a workflow was given."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from symalign.errors import SymalignError
from symalign.models import load_model
from symalign.models.family import TransformerModel
from symalign.runs.settings import SETTINGS, Settings
from symalign.runs.store import RunStore
from symalign.zoo import zoo_reference

ModelLike = TransformerModel | str | Path


def model_of(m: ModelLike) -> TransformerModel:
    return load_model(m) if isinstance(m, (str, Path)) else m


def loaded_here(m: ModelLike) -> bool:
    """A model the workflow loads itself from a path: nobody else holds it, so it may be consumed."""
    return isinstance(m, (str, Path))


def reference(m: ModelLike) -> str:
    """How the history names a model: as the user wrote it, or zoo:RECIPE/SEED for a zoo model."""
    if isinstance(m, (str, Path)):
        return str(m)
    return zoo_reference(m.source) if m.source else "(in memory)"


def failure_message(exc: BaseException) -> str:
    """One line for the run history: the user error as said, or what stopped the work."""
    if isinstance(exc, SymalignError):
        return str(exc)
    if isinstance(exc, Exception):
        return f"{type(exc).__name__}: {exc}"
    return "interrupted before it finished"  # Ctrl-C, or the app stopping or rerunning its script


@dataclass
class Recording:
    """A run being recorded: its id (None without a store), where its artifacts go, and its finish.
    Workflows write through it instead of checking for a store at each step."""

    store: RunStore | None
    id: str | None

    def folder(self, out: str | Path | None) -> Path:
        """`out` as given, else the data folder's runs/<id> (deleted with the run)."""
        if out is not None:
            return Path(out)
        from symalign.workspace import runs_dir

        return runs_dir() / (self.id or "latest")

    def finish(self, metrics: dict, artifacts: str | Path | None = None) -> None:
        if self.store is not None:
            self.store.finish(self.id, metrics, artifacts)


@contextmanager
def recorded(store: RunStore | None, kind: str, a: str, b: str, method: str, settings: Settings, source: str,
             label: str, models: list[str] | None = None) -> Iterator[Recording]:
    """Start a run row with its kind's typed settings (runs.records), and mark it failed (with one
    line) if the work raises or is stopped."""
    if not isinstance(settings, SETTINGS[kind]):
        raise TypeError(f"a {kind} run records {SETTINGS[kind].__name__}, not {type(settings).__name__}")
    if store is None:
        yield Recording(None, None)
        return
    run_id = store.start(kind, a, b, method, settings.to_json(), source, label, models)
    try:
        yield Recording(store, run_id)
    except BaseException as exc:  # also Streamlit's stop/rerun, which would leave the row `running`
        store.fail(run_id, failure_message(exc))
        raise
