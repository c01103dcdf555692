"""The coverage (which of the papers' tables and figures run on the zoo, and which are not covered) in
README.md and docs/papers.md, generated from the registry (symalign.sweeps.paper_tables.coverage_markdown).

    python -m research.docgen.papers_coverage [--write]

Without --write it exits 1 when either file is stale (tests/test_papers.py runs it)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from symalign.sweeps.paper_tables import coverage_markdown, coverage_sentence

ROOT = Path(__file__).resolve().parents[2]
START = "<!-- papers-coverage:start (python -m research.docgen.papers_coverage --write) -->"
END = "<!-- papers-coverage:end -->"
FILES = (ROOT / "README.md", ROOT / "docs" / "papers.md")


def with_table(text: str, short: bool = False) -> str:
    """`text` with the block between the markers replaced by the generated table (`short`: the README's
    few lines instead)."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError("no papers-coverage markers")
    body = coverage_sentence() if short else coverage_markdown()
    return pattern.sub(lambda _: f"{START}\n{body}\n{END}", text)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    generated = {path: with_table(path.read_text(encoding="utf-8"), short=path.name == "README.md")
                 for path in FILES}
    if "--write" in argv:
        for path, text in generated.items():
            path.write_text(text, encoding="utf-8")
        return 0
    stale = [p.name for p, text in generated.items() if p.read_text(encoding="utf-8") != text]
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m research.docgen.papers_coverage --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
