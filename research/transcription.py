"""Where a table's printed rows are in its paper's text, and the numbers on them, so a test can check
every transcribed value against the text (and fail when one is changed).

The texts were converted from PDF/HTML: a number is often printed twice ("49.0249.02" is 49.02) and bold
ones as "\\mathbf{4.95}"; `numbers_on` undoes both."""

from __future__ import annotations

import re
from pathlib import Path

from symalign.papers.table import PaperTable, Row

EXCERPTS = Path(__file__).with_name("excerpts")
# Texts that summarise a paper rather than print it: a table may be transcribed from one (its numbers are the
# paper's), but a claim is never quoted from one (its sentences are the summariser's, not the authors').
SUMMARIES = ("001_52d604f193ce0b6d.txt",)
LINES_AFTER_CAPTION = 30
_BOLD = re.compile(r"\\mathbf\{([^}]*)\}")
_DOUBLED = re.compile(r"(\d+\.\d+)\1")
_NUMBER = re.compile(r"[+-]?\d+\.\d+")


def numbers_on(line: str) -> list[float]:
    """The numbers a line prints, each once, with its sign."""
    line = _DOUBLED.sub(r"\1", _BOLD.sub(r"\1", line))
    return [float(x) for x in _NUMBER.findall(line)]


def table_region(text: str, table: PaperTable) -> list[str]:
    """The lines from the table's caption on (the same row label can occur in another table)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(table.caption)), None)
    if start is None:
        raise LookupError(f"{table.key}: caption {table.caption!r} not in {table.source}")
    return lines[start:start + LINES_AFTER_CAPTION]


def printed_row(region: list[str], label: str, occurrence: int = 0) -> list[float]:
    """The numbers after a row's label on its `occurrence`-th line in the region (0: the first; a label
    printed on several rows, as Zhang et al.'s "+match", is told apart by its place)."""
    seen = 0
    for line in region:
        line = line.strip()
        rest = line[len(label):]
        if line.startswith(label) and not (rest[:1].isalnum() or rest[:1] == "-"):  # "OT-ACTS", not "OT-ACTS-EMD"
            if seen == occurrence:
                return numbers_on(rest)
            seen += 1
    raise LookupError(f"row {label!r} ({occurrence + 1}. of its label) not found under its caption")


def occurrence(table: PaperTable, row: Row) -> int:
    """How many rows before this one print the same label (printed_row's `occurrence`)."""
    return [r.label for r in table.rows[:table.rows.index(row)]].count(row.label)


def normalised(text: str) -> str:
    """Prose as one line: PDF line-break hyphens joined ("allow-\\ning"), whitespace collapsed."""
    return " ".join(text.replace("-\n", "").split())


def quote_span(text: str, quote: str) -> tuple[int, int] | None:
    """Where a claim's quote is in the (normalised) text: its parts, split at " ... " (an elision), in order."""
    flat, at, start = normalised(text), 0, None
    for part in quote.split(" ... "):
        found = flat.find(part.strip(), at)
        if found < 0:
            return None
        start = found if start is None else start
        at = found + len(part.strip())
    return start, at


def claim_source(table: PaperTable, claim) -> str:
    """The text a claim is quoted from: its own, else its table's."""
    return claim.source or table.source


def excerpt(texts: dict[str, str], table: PaperTable) -> dict[str, str]:
    """What ships in research/excerpts/ for a table, per text file: its caption and the lines after it,
    then each claim's sentence (normalised, with a little context) in the file it is quoted from.
    `texts`: file name -> full text."""
    parts = {table.source: table_region(texts[table.source], table) if table.rows else []}
    for claim in table.claims:
        source = claim_source(table, claim)
        span = quote_span(texts[source], claim.quote)
        if span is None:
            raise LookupError(f"{table.key}: claim not in {source}: {claim.quote!r}")
        parts.setdefault(source, []).append(normalised(texts[source])[max(0, span[0] - 40):span[1] + 40])
    return {source: "\n".join(lines) + "\n" for source, lines in parts.items()}


def write_excerpts(papers: str | Path) -> list[Path]:
    """Rewrite the shipped excerpts from the full texts in the folder `papers`: every table's region
    and claims, one file per paper text."""
    from symalign.papers import TABLES

    texts = {p.name: p.read_text() for p in Path(papers).glob("*.txt")}
    parts: dict[str, list[str]] = {}
    for table in TABLES.values():
        for source, text in excerpt(texts, table).items():
            parts.setdefault(source, []).append(text)
    written = []
    for source, chunks in parts.items():
        (EXCERPTS / source).write_text("\n".join(chunks))
        written.append(EXCERPTS / source)
    return written
