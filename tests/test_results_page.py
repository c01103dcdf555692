"""docs/results.md is its committed records rendered (issue #107): `results_report --from-records` writes the
page again from docs/results/records/ alone, byte for byte, running no model; a page edited by hand, or
records changed without the page, fails here. (tests/test_sweep.py checks that a computing run leaves records
that render to the page it wrote, and that a changed record changes the page.)"""

from __future__ import annotations

from pathlib import Path

from research.docgen import records, results_report

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_results_page_is_what_its_records_render(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "results.md"
    try:
        results_report.main(["--from-records", "--out", str(out)])
    finally:
        records.use(records.Records())
    committed = (ROOT / "docs" / "results.md").read_text()
    assert out.read_text() == committed, ("docs/results.md differs from its records: run "
                                          "python -m research.docgen.results_report --from-records")
    assert "## vit-digits" in committed and "## gpt-shakespeare" in committed  # the page holds the report
