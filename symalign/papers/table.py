"""A paper's table as an object: the setting it was measured in, every value it prints (transcribed from
the paper's text, ± where it gives one), its claims in its own words, and how the zoo runs it. Plain
data: the registry (symalign.papers) collects them; the sweeps, the report and the app read them."""

from __future__ import annotations

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
