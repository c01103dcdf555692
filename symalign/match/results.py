"""What a two-model alignment reports, as typed records: the report, tables and pages read fields,
not dict keys, so a renamed or missing entry fails where it is read instead of printing nothing.

alignment.json keeps the JSON it always had (`to_json`), and `from_json` reads it back, older files
included (entries a record does not know are ignored; fields they lack take their defaults)."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field, fields


class Record:
    """JSON in and out for a flat dataclass: None fields are left out of the JSON (an entry says only
    what it measured), unknown keys are ignored on the way in."""

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class SweepRecord(Record):
    """One entry of weight matching's history: after sweep `sweep` (0: before any; `step` names a
    start such as the residual's from the boundary tensors). The last says why it `stopped`."""

    sweep: int
    distance: float  # ‖A − T(B)‖ / ‖A‖ over all tensors
    seconds: float  # since the start, per-sweep barrier measurements excluded
    step: str | None = None
    stopped: str | None = None
    barrier: float | None = None  # --barrier-per-sweep
    accuracy_barrier: float | None = None
    inner_passes: int | None = None  # --inner-passes run after this sweep


@dataclass
class LearnedStep(Record):
    """One step of learned or soft matching (step 0: the start), with its check value every few steps."""

    step: int
    seconds: float
    loss: float | None = None  # the training objective at this step's mixing weights
    check: float | None = None  # the fixed check batch's mean loss along the path (lower is better)
    flips: int | None = None  # permutation entries that changed in this step
    lr: float | None = None
    weights: list[float] | None = None  # the mixing weights drawn (λ for two models)


@dataclass
class LearnedSummary(Record):
    """How a learned run went: steps run, the best step and its check against the start's, why it stopped."""

    steps: int = 0
    stopped: str = ""
    best_step: int | None = None
    start_check: float | None = None
    best_check: float | None = None
    freeze_step: int | None = None
    start: int | None = None  # which offered start was chosen (`--start auto`)
    start_checks: list[float] | None = None
    seconds: float | None = None
    options: dict | None = None  # the optimiser's settings as run
    unrounded: dict | None = None  # soft --no-round: midpoint loss vs endpoint's distance (learned.unrounded_tradeoff)

    @property
    def improvement(self) -> float:
        """How much lower the path's check is than at the start (nan when not measured)."""
        if self.start_check is None or self.best_check is None:
            return math.nan
        return self.start_check - self.best_check


@dataclass
class MatchReport:
    """A two-model alignment: the pair, the settings as run, the matcher's history and the checks
    that B's function was kept (`function_gap_vs_b`) and its weights moved towards A's (distances)."""

    a: str | None
    b: str | None
    config: dict  # AlignConfig.to_json(): the settings as run
    distance_before: float
    distance_after: float
    function_gap_vs_b: float  # max |Δlogit| between aligned B and B on random inputs
    seconds: float
    sweeps: list[SweepRecord] = field(default_factory=list)
    learned: list[LearnedStep] = field(default_factory=list)
    learned_summary: LearnedSummary | None = None
    widths: dict | None = None  # a narrower model embedded in the wider one's basis

    @property
    def sweeps_run(self) -> int:
        return max([s.sweep for s in self.sweeps] or [0])

    @property
    def stopped(self) -> str | None:
        """Why weight matching (or a learned run's weight-matching start) ended."""
        return self.sweeps[-1].stopped if self.sweeps else None

    @property
    def barrier_per_sweep(self) -> list[SweepRecord]:
        return [s for s in self.sweeps if s.barrier is not None]

    def to_json(self) -> dict:
        out = {"a": self.a, "b": self.b, "config": self.config, "sweeps": [s.to_json() for s in self.sweeps],
               "learned": [h.to_json() for h in self.learned],
               "learned_summary": self.learned_summary.to_json() if self.learned_summary else {},
               "distance_before": self.distance_before, "distance_after": self.distance_after,
               "function_gap_vs_b": self.function_gap_vs_b, "seconds": self.seconds}
        if self.widths:
            out["widths"] = self.widths
        return out

    @classmethod
    def from_json(cls, data: dict) -> MatchReport:
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        summary = data.get("learned_summary") or None
        return cls(**{k: data.get(k) for k in required},
                   sweeps=[SweepRecord.from_json(s) for s in data.get("sweeps", [])],
                   learned=[LearnedStep.from_json(h) for h in data.get("learned", [])],
                   learned_summary=LearnedSummary.from_json(summary) if summary else None,
                   widths=data.get("widths"))
