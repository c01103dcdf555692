"""The architecture families symalign supports, one adapter module each, collected here: every
`Family` defined at the top level of a module in this folder is supported (loading, matching,
export, the app), and one that supplies `tiny` and `test_configs` is also built by `symalign init`
and covered by the tests that run over every family. A new family is one file here."""

from __future__ import annotations

import pkgutil
from importlib import import_module

from symalign.models.family import Family


def collect() -> dict[str, Family]:
    """{key: Family} (the model type, or MODEL_TYPE-VARIANT) over the adapter modules, in module then
    definition order. A model type may have several (BERT's masked-LM and its sequence classifier):
    its config's `architectures` picks one."""
    found: dict[str, Family] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Family):
                found.setdefault(value.key, value)
    return found
