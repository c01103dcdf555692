"""No text cut at 1280×720 (issue #70: the symmetry grid's headers broke mid-word, "permutati/on"; issue #109:
the Align method box read "weight: data-free: coordinate descen", the zoo table's command column, the
Interpolation table's last column and the Jobs page's progress column were off the edge, and a paper's
table pushed the whole page sideways). Every page of the app, at a projector's size and with a model of a
long name among the user's own, is checked in chromium (research.docgen.app_screens.CUT_TEXT, the check
the docs' screenshots print too) for:
- text overflowing a clipped box, an input or a select box;
- a word broken across two lines;
- a data table scrolling sideways inside its box (but those that list every metric, `every_metric_table`);
- the page itself scrolling sideways."""

from __future__ import annotations

import shutil

import pytest
from browser_support import chromium, recorded, require_chromium, served_app, settle

from research.docgen.app_screens import CUT_TEXT, PAGES
from symalign.zoo import resolve_zoo

pytestmark = pytest.mark.slow

require_chromium()

LONG_NAME = "my-vit-digits-finetune-seed0-lr3e-4-v2"


def test_no_page_cuts_its_text_at_1280_by_720(tmp_path):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        # a run, so Compare and Interpolation show tables; a model of the user's own with a long name
        a, b, c = (f"zoo:vit-digits/{i}" for i in range(3))
        recorded(home, "barrier", a, b, "--points", "3", "--max-examples", "16")
        # and what fills the other pages' tables and pickers: a learned run (Spectra), a grid, two surfaces
        recorded(home, "align", a, b, "--method", "learned", "--data", "digits", "--steps", "5", "--classes", "all",
                 "--barrier", "--points", "3", "--max-examples", "16", "--out", str(tmp_path / "learned"))
        recorded(home, "sweep", "--preset", "quick", "--family", "vit-digits", "--points", "3", "--max-examples", "16")
        for method in ("none", "weight"):
            recorded(home, "simplex", a, b, c, "--method", method, "--resolution", "3", "--max-examples", "16")
        shutil.copytree(resolve_zoo("zoo:vit-digits/2"), home / "models" / LONG_NAME)
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        found = {}
        for name in PAGES:
            page.goto(f"{url}/{'' if name == 'home' else name}")
            page.locator('[data-testid="stSidebarNavLink"]').first.wait_for(timeout=60_000)
            settle(page)  # the page's own widgets paint after the navigation (a fixed 5 s before: 70 s of waiting)
            if name == "merge":
                page.get_by_role("tab", name="Carry a fine-tune over").click()
                settle(page)
            if name == "align":  # the long name in a model picker
                picker = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').nth(1).locator("input")
                picker.click()
                picker.fill(LONG_NAME)  # the list is long and drawn in part: typing filters it
                page.get_by_role("option").filter(has_text=LONG_NAME).first.click()
                settle(page)
            cut = page.evaluate(CUT_TEXT)
            if cut:
                found[name] = cut
        assert not found, found
