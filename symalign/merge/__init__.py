"""Use an alignment: merge aligned models (average, Fisher, RegMean), transport task vectors.

Names load on first use: the CLI reads the torch-free rule declarations in `symalign.merge.builtin_rules`
when it builds its parser, and importing the package must not pull torch in."""

from symalign.registry import lazy_exports

_HOMES = {
    "MergeResult": "merging", "merge_models": "merging",
    "ALIGNS": "merge_rule", "MergeRule": "merge_rule", "merge_rules": "merge_rule", "register": "merge_rule",
    "Transport": "task_vectors", "parse_alphas": "task_vectors", "transport": "task_vectors",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
