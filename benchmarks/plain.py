"""The baseline the speed benchmarks compare against: plain forward passes of one module."""

from __future__ import annotations

import time

import torch


def plain_forwards(model, data, max_examples, count: int) -> float:
    """Seconds for `count` plain forward passes over the evaluation batches."""
    module = model.to_module()
    batches = list(data.eval_batches(model, max_examples))
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(count):
            for inputs, _ in batches:
                module(**inputs)
    return time.perf_counter() - start
