"""Issue #70's run views, in chromium at a projector's 1280×720: three runs that share one label (the quick
grid's cells on three seed pairs) are three pills, each naming its pair, and their band averages n = 3;
Compare draws straight lines only and lists fitted curves apart, named as curves with the alignment they
started from."""

from __future__ import annotations

import re

import pytest
from browser_support import chromium, require_chromium, served_app

pytestmark = pytest.mark.slow

require_chromium()

PAIRS = (("0", "1"), ("0", "2"), ("1", "2"))


def record_runs(home, monkeypatch) -> None:
    """Three same-label straight lines (one per seed pair) and two fitted curves on pair 0↔1."""
    from symalign.cli import main
    from symalign.runs import RunStore
    from symalign.workflows.execute import barrier_run

    store = RunStore(home / "runs.sqlite")
    for a, b in PAIRS:
        barrier_run(f"zoo:vit-digits/{a}", f"zoo:vit-digits/{b}", points=3, max_examples=8, store=store,
                    label="quick vit-digits: none")
    monkeypatch.setenv("SYMALIGN_HOME", str(home))
    for align in (["--align", "weight"], []):
        assert main(["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", *align, "--steps", "2", "--points", "3",
                     "--max-examples", "8"]) == 0


def test_bands_over_three_same_label_runs_and_curves_kept_apart_in_chromium(tmp_path, monkeypatch):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        record_runs(home, monkeypatch)
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()

        page.goto(f"{url}/interpolation")
        page.get_by_text("mean ± std over seed pairs").first.wait_for(timeout=60_000)
        picker = page.locator('[data-testid="stMultiSelect"]').first
        picker.get_by_text("quick vit-digits: none").first.wait_for(timeout=30_000)
        texts = re.findall(r"quick vit-digits: none[^\n×]*", picker.inner_text())
        assert len(texts) == 3, texts  # three runs, not one merged by their shared label
        for a, b in PAIRS:  # each pill names its pair
            assert sum(f"{a}↔{b}" in t for t in texts) == 1, texts
        page.get_by_text("mean ± std over seed pairs").first.click()
        page.get_by_text(re.compile(r"3 runs in 1 group")).first.wait_for(timeout=60_000)
        legend = page.locator(".js-plotly-plot .legendtext")
        legend.first.wait_for(timeout=30_000)
        assert any("(n = 3)" in t for t in legend.all_text_contents()), legend.all_text_contents()
        assert page.get_by_text("Traceback").count() == 0

        from symalign.runs import RunStore

        every = ",".join(r.id for r in RunStore(home / "runs.sqlite").list())
        page.goto(f"{url}/compare?runs={every}")  # all five (Compare preselects the newest pair's alone)
        page.get_by_text("Fitted curves (not straight lines)").first.wait_for(timeout=60_000)
        bars = page.locator(".js-plotly-plot .barlayer .point")
        bars.first.wait_for(timeout=30_000)
        assert bars.count() == 3  # the three straight lines; no curve among the matchers' bars
        page.get_by_text("Fitted curves (not straight lines)").first.scroll_into_view_if_needed()
        page.wait_for_timeout(1500)
        grid = page.locator('[data-testid="stDataFrame"]')
        assert grid.count() == 2  # the straight lines' table and the curves' own
        curves = _grid_text(page)
        assert "curve (Bézier), unaligned" in curves and "curve (Bézier), aligned by weight (all)" in curves
        assert page.get_by_text("Traceback").count() == 0


def _grid_text(page) -> str:
    """The text of Streamlit's canvas data grids, from the accessible table they keep beside the canvas."""
    return " ".join(page.locator('[data-testid="stDataFrame"] table').all_inner_texts())
