"""Typed settings of recorded runs: what a run was asked to do, written to the history as JSON and
read back through the same class, so readers (the sweep's reuse index, run views) do not rebuild
field names by hand."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class AlignSettings:
    """An `align` run: the fitted AlignConfig (as JSON), the curve's points and examples, whether the
    barrier was measured and whether the run owns its artifact folder (deleted with it)."""

    config: dict
    points: int = 21
    max_examples: int | None = None
    measure: bool = True
    owns_artifacts: bool = True

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, settings: dict) -> "AlignSettings":
        return cls(**{f.name: settings[f.name] for f in fields(cls) if f.name in settings})

    def reuse_key(self, a: str, b: str) -> str:
        """Two align runs of the same pair with equal keys compute the same numbers (a sweep reuses one)."""
        return json.dumps([a, b, self.config, self.points, self.max_examples], sort_keys=True)
