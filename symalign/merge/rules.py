"""The merge rules symalign offers: averaging, Fisher, RegMean, and mergekit's methods.

Importing this module registers them (symalign.merge.rule holds the registry and what a rule is), so
`symalign merge --how`, the Merge page and `merge_models` read the whole catalog from here."""

from __future__ import annotations

from symalign.merge.rule import (  # noqa: F401  (the registry's API, re-exported beside the catalog)
    ALIGNS,
    MERGE_ALIGNS,
    OT_ALIGNS,
    OT_SOLVERS,
    MergeInputs,
    MergeRule,
    install_hint,
    merge_rule,
    merge_rules,
    register,
    unregister,
)

register(MergeRule("average", "average", "symalign.merge.merging:average"))
register(MergeRule("fisher", "Fisher-weighted average", "symalign.merge.fisher:fisher_merge", needs_data=True))
register(MergeRule("regmean", "RegMean (per linear map)", "symalign.merge.regmean:regmean_merge", needs_data=True))

# mergekit's methods (TIES, DARE, SLERP, task arithmetic, model stock, linear), after the built-ins so that
# listings keep this order; declared there without importing mergekit (it loads when such a rule first runs).
import symalign.merge.mergekit_methods  # noqa: E402,F401
