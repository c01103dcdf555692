"""The merge rules symalign offers: averaging, Fisher, RegMean, and mergekit's methods.

Importing this module registers them (symalign.merge.merge_rule holds the registry and what a rule is), so
`symalign merge --how`, the Merge page and `merge_models` read the whole catalog from here."""

from __future__ import annotations

from symalign.merge.merge_rule import (  # noqa: F401  (the registry's API, re-exported beside the catalog)
    ALIGNS,
    MERGE_ALIGNS,
    OT_ALIGNS,
    OT_SOLVERS,
    TRANSPORT_ALIGNS,
    TRANSPORT_HEAD_STRATEGIES,
    MergeInputs,
    MergeRule,
    install_hint,
    merge_rule,
    merge_rules,
    register,
    unregister,
)

register(MergeRule("average", "average", "symalign.merge.merge_rule:average"))
register(MergeRule("fisher", "Fisher-weighted average", "symalign.merge.fisher:fisher_merge", needs_data=True))
register(MergeRule("regmean", "RegMean (per linear map)", "symalign.merge.regmean:regmean_merge", needs_data=True))
# OT fusion as a merge rule (Zhang et al. Table 2: matching is a plug-in *before* any fusion): the members, aligned or
# not, are carried onto the first by transport plans, then averaged. `--align none --how ot-acts` is `--align ot-acts`.
register(MergeRule("ot-acts", "OT-ACTS fusion (plans from activations, then the average)",
                   "symalign.merge.ot_fusion:ot_acts_merge", needs_data=True,
                   help="Imfeld et al.'s OT fusion on the (aligned) members: --ot-solver emd is Zhang et al.'s "
                        "OT-ACTS-EMD, sinkhorn their OT-ACTS"))
register(MergeRule("ot-wts", "OT-WTS fusion (plans from weights, then the average)",
                   "symalign.merge.ot_fusion:ot_wts_merge",
                   help="Imfeld et al.'s OT fusion from weights on the (aligned) members (--ot-solver: emd or "
                        "sinkhorn)"))

# mergekit's methods (TIES, DARE, SLERP, task arithmetic, model stock, linear), after the built-ins so that
# listings keep this order; declared there without importing mergekit (it loads when such a rule first runs).
import symalign.merge.mergekit_methods  # noqa: E402,F401
