"""Use an alignment: merge aligned models (average, Fisher, RegMean), transport task vectors."""

from symalign.merge.merging import MergeResult, merge_models
from symalign.merge.rules import ALIGNS, MergeRule, merge_rules, register
from symalign.merge.transport import Transport, parse_alphas, transport

__all__ = ["ALIGNS", "MergeResult", "MergeRule", "merge_rules", "register", "Transport", "merge_models", "parse_alphas", "transport"]
