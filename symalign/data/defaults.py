"""The learned matcher's data-dependent defaults, readable without importing torch or loading data
(the app shows them on Home before anything heavy is imported)."""

from __future__ import annotations

IMAGE_KINDS = ("digits", "digits-flipped", "cifar10", "cifar100", "fashion-mnist", "imagefolder")
IMAGE_LEARNED_DEFAULTS = {"steps": 600, "input_noise": 0.3}  # noise: the learned maps over-fit 1,437 digits
TEXT_LEARNED_DEFAULTS = {"steps": 600, "input_noise": 0.0}  # 300 left 96.8-96.9% of two held-out prose pairs (#59)


def learned_defaults(spec: str) -> dict:
    """The learned matcher's defaults (steps, input noise) for a data spec, without loading the data."""
    kind = spec.partition(":")[0]
    return dict(IMAGE_LEARNED_DEFAULTS if kind in IMAGE_KINDS else TEXT_LEARNED_DEFAULTS)
