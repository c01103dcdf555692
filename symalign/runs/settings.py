"""Typed settings of recorded runs: what a run was asked to do, written to the history as JSON and
read back through the same class, so readers (the sweep's reuse index, run views) do not rebuild
field names by hand. One class per run kind (`SETTINGS`); `settings_of(kind, settings)` reads any
run's (a stored run's `typed_settings`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class Settings:
    """JSON in and out for a settings dataclass (fields an older row lacks take their defaults)."""

    def to_json(self) -> dict:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_json(cls, settings: dict):
        return cls(**{f.name: settings[f.name] for f in fields(cls) if f.name in settings})  # type: ignore[arg-type]


@dataclass(frozen=True)
class AlignSettings(Settings):
    """An `align` run: the fitted AlignConfig (as JSON), the curve's points and examples, whether the
    barrier was measured and whether the run owns its artifact folder (deleted with it)."""

    config: dict
    points: int = 21
    max_examples: int | None = None
    measure: bool = True
    owns_artifacts: bool = True
    split: str = "eval"  # the split the barrier was measured on (symalign.data.splits)

    def reuse_key(self, a: str, b: str) -> str:
        """Two align runs of the same pair with equal keys compute the same numbers (a sweep reuses one).
        The evaluation split leaves the key as it was before splits, so earlier runs still count."""
        key = [a, b, self.config, self.points, self.max_examples] + ([self.split] if self.split != "eval" else [])
        return json.dumps(key, sort_keys=True)


@dataclass(frozen=True)
class BarrierSettings(Settings):
    """A `barrier` run: the curve between two models as given (or their canonical forms)."""

    data: str
    points: int = 21
    max_examples: int | None = None
    device: str = "auto"
    form: str = "canonical"
    split: str = "eval"


@dataclass(frozen=True)
class ManySettings(Settings):
    """An `align-many` run: a universe alignment of three or more models (optionally every pair's curve)."""

    config: dict
    points: int = 21
    max_examples: int | None = None
    measure: bool = False
    owns_artifacts: bool = True
    split: str = "eval"  # where the pairwise curves were measured (symalign.data.splits)


@dataclass(frozen=True)
class SimplexSettings(Settings):
    """A `simplex` run: the loss surface over three models after their universe alignment."""

    config: dict
    data: str
    resolution: int = 10
    epsilon: float = 0.05
    max_examples: int | None = None
    split: str = "eval"


@dataclass(frozen=True)
class SpectrumSettings(Settings):
    """A `spectrum` run: the eigen-angles of a saved learned alignment (`of_run`: the run it analyses)."""

    alignment: str
    of_run: str | None = None


@dataclass(frozen=True)
class MergeSettings(Settings):
    """A `merge` run: the alignment, the merge rule with its parameters, and the base when the rule takes one."""

    align: str
    how: str
    data: str
    examples: int = 64
    max_examples: int | None = None
    seed: int = 0
    owns_artifacts: bool = True
    dtype: str = "auto"
    device: str = "auto"
    base: str | None = None
    parameters: dict = field(default_factory=dict)
    ot: dict = field(default_factory=dict)  # OT fusion's plan solver ({"solver", "reg"}), for --align / --how ot-*
    alignment: dict = field(default_factory=dict)  # the matcher's classes and options when given (else all classes)
    keep_head: bool = False  # the output head copied from the first model, not merged


@dataclass(frozen=True)
class TransportSettings(Settings):
    """A `transport` run: a fine-tune's task vector carried into another model, at several α."""

    a_ft: str
    align: str
    alpha: list
    data_task: str
    data_base: str
    max_examples: int | None = None
    seed: int = 0
    owns_artifacts: bool = True
    dtype: str = "auto"
    device: str = "auto"
    alignment: dict = field(default_factory=dict)  # the matcher's classes and options when given (else all classes)
    few_shot: int = 0  # > 0: the task vector also scaled per layer by α learned on that many examples per class
    residual_per_block: bool = False  # TransFusion's residual: a permutation per stream from the weights


@dataclass(frozen=True)
class SweepSettings(Settings):
    """A `sweep` run: its grid (symalign.sweeps.grid, as JSON) and where its cells ran; stored flat, the
    grid's keys beside `executor` and `address`."""

    grid: dict
    executor: str = "serial"
    address: str | None = None

    def to_json(self) -> dict:
        return dict(self.grid, executor=self.executor, address=self.address)

    @classmethod
    def from_json(cls, settings: dict) -> SweepSettings:
        grid = {k: v for k, v in settings.items() if k not in ("executor", "address")}
        return cls(grid, settings.get("executor", "serial"), settings.get("address"))


@dataclass(frozen=True)
class CurveSettings(Settings):
    """A `curve` run: the fitted bend (symalign.landscape.curve), how B was aligned first (an AlignConfig
    as JSON, an alignment folder or run id, or "none"), and the points and examples each path is measured on."""

    data: str
    bend: str = "bezier"
    steps: int = 400
    lr: float = 0.01
    batch_size: int = 32
    seed: int = 0
    align: dict | str = "none"
    points: int = 21
    max_examples: int | None = None
    device: str = "auto"


@dataclass(frozen=True)
class PaperSettings(Settings):
    """A `paper` run: one of the papers' tables (symalign.papers) run on a zoo family, its text recorded."""

    table: str
    family: str
    max_examples: int | None = None


@dataclass(frozen=True)
class PlaneSettings(Settings):
    """A `plane` run: the loss over the plane through three models, with curve folders drawn on it (the
    "Beyond the straight line" page's plane, issue #70: a job with progress instead of a page spinner)."""

    models: list
    curves: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    resolution: int = 21
    max_examples: int | None = None
    line_to_c: bool = True


SETTINGS: dict[str, type[Settings]] = {"sweep": SweepSettings, "curve": CurveSettings, "paper": PaperSettings,
    "plane": PlaneSettings,
    "align": AlignSettings, "barrier": BarrierSettings, "align-many": ManySettings, "simplex": SimplexSettings,
    "spectrum": SpectrumSettings, "merge": MergeSettings, "transport": TransportSettings}


def settings_of(kind: str, settings: dict) -> Any:
    """A run's settings (as stored) read through its kind's class."""
    return SETTINGS[kind].from_json(settings)
