"""Use an alignment: merge aligned models (average, Fisher, RegMean)."""

from symalign.merge.merging import ALIGNS, HOWS, MergeResult, merge_models

__all__ = ["ALIGNS", "HOWS", "MergeResult", "merge_models"]
