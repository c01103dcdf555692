"""A seminar's room at once (issue #70): six guests of a fresh `symalign app --share` click "Run the
guided demo" together. Every page must finish the demo (both parts) without an exception, and no
guest's page may show a host path.

Before the fix, part 1 was an `st.cache_data` function that drew into the first visitor's progress
bar; Streamlit replayed that element call for the others waiting on the same key, and 3-5 of 6 pages
showed CacheReplayClosureError."""

from __future__ import annotations

import time

import pytest
from browser_support import chromium, require_chromium, served_app

pytestmark = pytest.mark.slow

require_chromium()

GUESTS = 6
STEPS = "40"  # the learned part's steps: the pages are what is tested here (test_zoo_ordering has the science)


def test_six_guests_run_the_guided_demo_at_once(tmp_path):
    with served_app(tmp_path, "--share") as (url, _, home), chromium() as browser:
        pages = []
        for _ in range(GUESTS):  # a context each: separate cookies, separate sessions, as six laptops
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            page.goto(url)
            pages.append(page)
        for page in pages:
            page.get_by_text("Guided demo", exact=True).wait_for(timeout=120_000)
            steps = page.locator('input[aria-label="learned matching steps"]')
            steps.fill(STEPS)
            steps.press("Enter")
        time.sleep(1.5)
        for page in pages:  # back to back, before the first click's computation ends
            page.locator("button", has_text="Run the guided demo").first.click()
        texts = []
        for i, page in enumerate(pages):  # every guest first: the exception is what a seminar breaks on
            page.get_by_text("2 · Two seeds trained apart", exact=True).wait_for(timeout=600_000)
            assert page.locator('[data-testid="stException"]').count() == 0, f"guest {i}: " + \
                page.locator('[data-testid="stException"]').first.inner_text()[:500]
            page.get_by_text("1 · The same function, far apart in weight space", exact=False).first.wait_for(
                timeout=60_000)
            text = page.locator("body").inner_text()
            assert "Error" not in text and "internal error" not in text, f"guest {i}: {text[:2000]}"
            box = page.locator('[data-testid="stMetric"]', has_text="barrier after weight matching").first
            assert float(box.locator('[data-testid="stMetricValue"]').inner_text()) < 1e-3  # T found and undone
            texts.append(text)
        for i, text in enumerate(texts):
            assert str(home) not in text and str(tmp_path) not in text, f"guest {i} sees a host path"
            assert "Data folder" not in text
