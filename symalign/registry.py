"""One registry mechanism for every extension point (matchers, merge rules): entries by name in
registration order, one-line refusals of unknown names, and functions named "module:function" so
that declaring an entry never imports torch (the CLI builds its parser from the declarations)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Generic, TypeVar

from symalign.errors import SymalignError

Entry = TypeVar("Entry")


def resolve(function: Callable | str) -> Callable:
    """A callable as it is, or "module:function" imported now."""
    if callable(function):
        return function
    module, _, name = function.partition(":")
    return getattr(import_module(module), name)


def lazy_exports(package: str, homes: dict[str, str]) -> Callable[[str], object]:
    """A package's module-level __getattr__ (PEP 562) that imports each exported name from its home
    module on first use: the CLI imports a package's light parts without loading its heavy ones."""
    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{homes[name]}"), name)
    return __getattr__


class Registry(Generic[Entry]):
    def __init__(self, unknown: str):
        self.unknown = unknown  # the refusal, with {name} and {choices}
        self._entries: dict[str, Entry] = {}

    def register(self, entry: Entry) -> Entry:
        """Add (or replace) an entry; it appears wherever this registry's choices are offered."""
        self._entries[entry.name] = entry
        return entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def entries(self) -> dict[str, Entry]:
        return dict(self._entries)

    def get(self, name: str) -> Entry:
        if name not in self._entries:
            raise SymalignError(self.unknown.format(name=repr(name), choices=", ".join(self._entries)))
        return self._entries[name]
