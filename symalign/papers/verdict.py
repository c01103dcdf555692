"""The one rule that turns per-pair differences into a verdict (issue #69): a claim "agrees" only when
it holds on every pair, or when the mean difference exceeds twice its standard error; otherwise it agrees
on k of n pairs, or does not agree. A mean alone ("+0.0 pp, the other way on 2 of 3 pairs") never decides."""

from __future__ import annotations

import math
from collections.abc import Mapping


def verdict(differences: Mapping[str, float], unit: str = "", scale: float = 1.0, digits: int = 2) -> str:
    """`differences`: per pair, (what the claim says is larger) − (what it says is smaller); positive holds.
    Returns e.g. "agrees (every pair: 6 of 6; mean +1.20 ± 0.30 SE)" or "agrees on 2 of 6 pairs (...)"."""
    if not differences:
        return "not run"
    values = [scale * v for v in differences.values()]
    n = len(values)
    mean = sum(values) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n) if n > 1 else float("nan")
    held = [k for k, v in zip(differences, values) if v > 0]
    stats = f"mean {mean:+.{digits}f}{unit}" + (f" ± {se:.{digits}f} SE" if n > 1 else "")
    against = [f"{k} ({v:+.{digits}f}{unit})" for k, v in zip(differences, values) if v <= 0]
    if len(held) == n:
        return f"agrees (every pair: {n} of {n}; {stats})"
    if n > 1 and mean > 2 * se:
        return f"agrees (mean beyond 2 SE: {stats}; the other way on {', '.join(against)})"
    if held:
        return f"agrees on {len(held)} of {n} pairs ({stats}; the other way on {', '.join(against)})"
    return f"does not agree (0 of {n} pairs; {stats})"
