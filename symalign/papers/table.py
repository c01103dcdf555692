"""A paper's table as an object: the setting it was measured in, every value it prints (transcribed from
the paper's text, ± where it gives one), its claims in its own words, and how the zoo runs it. Plain
data: the registry (symalign.papers) collects them; the sweeps, the report and the app read them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Row:
    """One printed row: its label as the paper prints it, then its numbers in column order (a value and
    its ± are two numbers, as the text prints them)."""

    label: str
    numbers: tuple[float, ...]
    name: str = ""  # our name for it where the label is typeset (e.g. "θ_B zero-shot"); else the label

    @property
    def shown(self) -> str:
        return self.name or self.label


@dataclass(frozen=True)
class Claim:
    """A claim in the paper's words, and how symalign decides it on the zoo (or why it cannot)."""

    quote: str
    decided_by: str
    testable: bool = True
    # The text it is quoted from when not the table's: a table printed in a summary of the paper has its
    # claims quoted from the authors' own text (Theus et al.'s appendix), never from the summary's words.
    source: str = ""


@dataclass(frozen=True)
class PaperTable:
    key: str  # e.g. "transfusion-table3": the CLI's and the app's name for it
    paper: str  # "Rinaldi et al. 2025 (TransFusion)"
    source: str  # the file name of its converted text (research/excerpts/ keeps the table's region)
    name: str  # "Table 3"
    caption: str  # the caption's opening words as printed: where the rows are looked for in the text
    setting: str  # the paper's setting: models, data, symmetry classes, metric, protocol
    columns: tuple[str, ...]  # one per printed number of a row
    rows: tuple[Row, ...]
    claims: tuple[Claim, ...] = ()
    plus_minus: str = ""  # what a ± is (standard deviation over seeds, standard error, ...)
    zoo: str = ""  # how the zoo runs it, and what differs ("not comparable: ...")
    preset: str | None = None  # `symalign sweep --preset P` runs it on the zoo
    notes: tuple[str, ...] = field(default_factory=tuple)
    fmt: str = ".2f"  # as the paper prints its numbers (TransFusion's changes: "+.2f")

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.shown == name or r.label == name)

    def value(self, row: str, column: str) -> float:
        return self.row(row).numbers[self.columns.index(column)]

    def markdown(self) -> str:
        """The paper's table as printed, under its name and setting."""
        lines = [f"**{self.paper}, {self.name}**: {self.setting}", "",
                 "| " + " | ".join(("row", *self.columns)) + " |", "|---" * (len(self.columns) + 1) + "|"]
        lines += ["| " + " | ".join((r.shown, *(format(v, self.fmt) for v in r.numbers))) + " |" for r in self.rows]
        if self.plus_minus:
            lines += ["", f"± is {self.plus_minus}."]
        return "\n".join(lines)


def verdict(differences: Mapping[str, float], unit: str = "", scale: float = 1.0, digits: int = 2) -> str:
    """The one verdict rule. `differences`: per pair, (what the claim says is larger) − (what it says is
    smaller); positive holds. "agrees" on every pair or with the paired mean beyond 2 SE; "contradicted" the
    other way on every pair or with the mean beyond 2 SE the other way; else "not separable". The per-pair
    count and the exceptions are always said, e.g. "agrees (every pair: 6 of 6; mean +1.20 ± 0.30 SE)"."""
    if not differences:
        return "not run"
    values = [scale * v for v in differences.values()]
    n = len(values)
    mean = sum(values) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n) if n > 1 else float("nan")
    held = [k for k, v in zip(differences, values) if v > 0]
    stats = f"mean {mean:+.{digits}f}{unit}" + (f" ± {se:.{digits}f} SE" if n > 1 else "")
    against = [f"{k} ({v:+.{digits}f}{unit})" for k, v in zip(differences, values) if v <= 0]
    agreeing = [f"{k} ({v:+.{digits}f}{unit})" for k, v in zip(differences, values) if v > 0]
    if len(held) == n:
        return f"agrees (every pair: {n} of {n}; {stats})"
    if n > 1 and mean > 2 * se:
        return f"agrees (mean beyond 2 SE: {stats}; {len(held)} of {n} pairs; the other way on {', '.join(against)})"
    if not held:
        return f"contradicted (the other way on every pair: 0 of {n}; {stats})"
    if n > 1 and mean < -2 * se:
        return (f"contradicted (mean beyond 2 SE the other way: {stats}; {len(held)} of {n} pairs agree: "
                f"{', '.join(agreeing)})")
    return f"not separable ({len(held)} of {n} pairs agree; {stats}; the other way on {', '.join(against)})"
