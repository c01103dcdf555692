"""Every registered paper table opens from the Ablations page at 1280×720 with the paper's printed values
(where it prints any), the zoo's numbers beside them and the verdicts by the one rule, and nothing cut
(issue #107). The zoo's side is what `research.docgen.paper_runs` recorded from running each table
(docs/results/records/paper-runs.json), put into the app's run history as `symalign paper --run` records it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_support import chromium, require_chromium, served_app, settle
from test_browser_app_use import VIEWPORT, pick

from research.docgen.app_screens import CUT_TEXT
from symalign.papers import TABLES
from symalign.runs import RunStore
from symalign.runs.recording import recorded
from symalign.runs.settings import PaperSettings

pytestmark = pytest.mark.slow

require_chromium()

PAPER_RUNS = Path(__file__).resolve().parents[1] / "docs" / "results" / "records" / "paper-runs.json"
VERDICT = re.compile(r"\b(agrees|contradicted|not separable)\b")


def test_every_registered_table_opens_with_both_columns_and_its_verdict(tmp_path):
    runs = json.loads(PAPER_RUNS.read_text())
    assert set(runs) == set(TABLES), "run python -m research.docgen.paper_runs"
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        store = RunStore(home / "runs.sqlite")
        for key, run in runs.items():
            family = run["family"]
            with recorded(store, "paper", f"zoo:{family}/0", f"zoo:{family}/1", key,
                          PaperSettings(key, family, run["max_examples"]), "cli", key) as made:
                made.finish({"text": run["text"], "paper_table": run["paper_table"], "table": key, "family": family})
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.goto(f"{url}/ablations")
        page.get_by_text("The papers' tables", exact=True).wait_for(timeout=120_000)
        intro = page.locator('[data-testid="stMain"]').inner_text().split("The papers' tables")[0]
        assert "in its setting" not in intro and "own setting" not in intro  # they run on stand-ins (issue #107)
        problems = {}
        for key, table in TABLES.items():
            pick(page, 0, f"{table.paper} — {table.name}")
            page.get_by_text(f"On the zoo: {runs[key]['family']}", exact=False).first.wait_for(timeout=30_000)
            settle(page)
            said = page.locator('[data-testid="stMain"]').inner_text()
            ours = said[said.index(f"On the zoo: {runs[key]['family']} (run"):]
            wrong = []
            if table.rows:  # the paper's printed values: its first row, as printed
                first = table.rows[0]
                if not all(format(v, table.fmt) in said for v in first.numbers):
                    wrong.append("the paper's values are not shown")
            if not re.search(r"\d\.\d", ours):
                wrong.append("no numbers of the zoo's")
            if not VERDICT.search(ours):
                wrong.append("no verdict")
            cut = page.evaluate(CUT_TEXT)
            if cut:
                wrong.append(f"cut: {cut}")
            page.screenshot(path=str(tmp_path / f"{key}.png"))
            if wrong:
                problems[key] = wrong
        assert not problems, problems
