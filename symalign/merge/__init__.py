"""Use an alignment: merge aligned models (average, Fisher, RegMean), transport task vectors."""

from symalign.merge.merging import ALIGNS, HOWS, MergeResult, merge_models
from symalign.merge.transport import Transport, parse_alphas, transport

__all__ = ["ALIGNS", "HOWS", "MergeResult", "Transport", "merge_models", "parse_alphas", "transport"]
