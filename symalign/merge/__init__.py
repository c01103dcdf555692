"""Use an alignment: merge aligned models (average, Fisher, RegMean), transport task vectors.

Names load on first use (PEP 562): the CLI reads the torch-free rule declarations in
`symalign.merge.rules` when it builds its parser, and importing the package must not pull torch in."""

from importlib import import_module

_HOMES = {
    "MergeResult": "merging", "merge_models": "merging",
    "ALIGNS": "rules", "MergeRule": "rules", "merge_rules": "rules", "register": "rules",
    "Transport": "task_vectors", "parse_alphas": "task_vectors", "transport": "task_vectors",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
