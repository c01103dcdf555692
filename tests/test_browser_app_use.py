"""The app in use (issue #109), in chromium at 1280×720, each as a user met it:
1. a grid whose cells were all computed before is shown once it ran, saying its cells were reused (the page
   went on showing the earlier grid);
2. an upload without a tokenizer says at import what it cannot do yet, Align keeps its button off with the
   reason, and the Models page's ways on (a tokenizer from the zoo, the data recorded) make it measurable;
3. the guided demo's progress comes into view when its button is clicked (a status line at the bottom edge);
4. a paper table gives a time estimate before the click, and while it runs, one bar over the whole run with
   its part named and no "not run yet" note."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from browser_support import chromium, recorded, require_chromium, served_app, settle

pytestmark = pytest.mark.slow

require_chromium()

VIEWPORT = {"width": 1280, "height": 720}


def in_view(locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def test_a_grid_that_reused_every_cell_is_the_one_shown(tmp_path):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        earlier = recorded(home, "sweep", "--preset", "quick", "--family", "vit-digits", "--max-examples", "16")
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.goto(f"{url}/ablations")
        page.get_by_text("grid to show").first.wait_for(timeout=120_000)  # the earlier grid, shown first
        page.get_by_text("evaluation options").first.click()
        examples = page.locator('input[aria-label="evaluation examples (0 = all)"]').last  # the grid's own
        examples.fill("16")
        examples.press("Enter")
        settle(page)
        page.get_by_role("button", name="Run the grid").click()
        page.get_by_text("9 of 9 cells reused from earlier runs").first.wait_for(timeout=180_000)
        shown = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').last.locator("input").input_value()
        assert "0 executed, 9 reused" in shown and earlier["run"][-6:] not in shown, shown


def saved_gpt2_zip(folder, name: str) -> bytes:
    """A tiny GPT-2 saved with `save_pretrained` alone (no tokenizer, no record of its data), zipped."""
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, n_positions=64, vocab_size=128)).save_pretrained(
        folder / name)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in (folder / name).iterdir():
            archive.write(path, f"{name}/{path.name}")
    return buffer.getvalue()


def pick(page, index: int, text: str) -> None:
    """Choose the option holding `text` in the main area's `index`-th select box."""
    box = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').nth(index).locator("input")
    box.click()
    box.fill(text)  # the list is long and drawn in part: typing filters it
    page.get_by_role("option").filter(has_text=text).first.click()
    settle(page)


def test_an_upload_without_tokenizer_says_what_it_needs_and_gets_it(tmp_path):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.goto(f"{url}/models")
        page.get_by_text("The shipped zoo").first.wait_for(timeout=120_000)
        for name in ("gpt2a", "gpt2b"):
            uploader = page.locator('[data-testid="stFileUploader"]')
            for button in uploader.locator('button[aria-label^="Remove "]').all():
                button.click()  # the earlier zip: one model per import
                settle(page)
            page.locator('input[type="file"]').set_input_files(
                {"name": f"{name}.zip", "mimeType": "application/zip", "buffer": saved_gpt2_zip(tmp_path, name)})
            uploader.get_by_text(f"{name}.zip").wait_for(timeout=60_000)
            settle(page)
            page.get_by_role("button", name="Import").click()
            page.get_by_text(f"imported {name}").first.wait_for(timeout=120_000)
            said = page.locator('[data-testid="stAlert"]', has_text=f"imported {name}").inner_text()
            assert "Not yet barriers" in said and "no tokenizer" in said and "records no data" in said, said
        page.goto(f"{url}/align")
        page.get_by_text("Symmetries to use").first.wait_for(timeout=120_000)
        pick(page, 0, "yours: gpt2a")
        pick(page, 1, "yours: gpt2b")
        page.get_by_text("Not yet: Model A").first.wait_for(timeout=60_000)
        assert page.get_by_role("button", name="Align").is_disabled()
        assert "no tokenizer" in page.locator("body").inner_text()

        page.goto(f"{url}/models")
        page.get_by_text("What your models still need").first.wait_for(timeout=120_000)
        for name in ("gpt2a", "gpt2b"):  # a tokenizer from the zoo, then the data each is measured on
            panel = page.locator(f".st-key-need-{name}")
            donor = panel.locator('[data-testid="stSelectbox"] input')
            donor.click()
            donor.fill("gpt-shakespeare/0")
            page.get_by_role("option").filter(has_text="zoo:gpt-shakespeare/0").first.click()
            settle(page)
            panel.get_by_role("button", name="Take it").click()
            page.get_by_text(f"yours: {name}: took tokenizer.json").first.wait_for(timeout=60_000)
            panel = page.locator(f".st-key-need-{name}")
            settle(page)
            field = panel.locator('input[aria-label="the data it is measured on"]').first
            field.fill("shakespeare")
            field.press("Enter")
            settle(page)
            panel.get_by_role("button", name="Record it").click()
            page.get_by_text(f"yours: {name}: its data is now shakespeare").first.wait_for(timeout=60_000)
        page.goto(f"{url}/align")
        page.get_by_text("Symmetries to use").first.wait_for(timeout=120_000)
        pick(page, 0, "yours: gpt2a")
        pick(page, 1, "yours: gpt2b")
        page.get_by_text(re.compile("Measuring takes about")).first.wait_for(timeout=60_000)
        assert not page.get_by_role("button", name="Align").is_disabled()
        assert page.get_by_text("Not yet:").count() == 0


def test_the_demos_progress_comes_into_view_when_it_starts(tmp_path):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.goto(url)
        page.get_by_text("Guided demo", exact=True).wait_for(timeout=120_000)
        box = page.locator('input[aria-label="learned matching steps"]')
        box.fill("10")
        box.press("Enter")
        settle(page)
        page.locator("button", has_text="Run the guided demo").first.click()
        status = page.get_by_text(re.compile(r"^1 · (planting|planted)")).first
        status.wait_for(timeout=120_000)
        page.wait_for_timeout(1500)  # the scroll runs once its anchor is drawn
        assert in_view(status)
        page.get_by_text(re.compile(r"1 · The same function")).first.wait_for(timeout=300_000)
        page.wait_for_timeout(1000)
        assert in_view(page.get_by_text(re.compile(r"2 · two real seeds|part \d of 3|2 · Two seeds")).first) or \
            in_view(page.get_by_text(re.compile(r"1 · The same function")).first)


def test_a_paper_table_says_its_time_first_and_runs_under_one_bar(tmp_path):
    from symalign.jobs.queue import JobQueue

    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.goto(f"{url}/ablations")
        page.get_by_text("The papers' tables", exact=True).wait_for(timeout=120_000)
        pick(page, 0, "Theus et al. 2025 (Generalized LMC for Transformers) — Table 1")
        said = page.locator("body").inner_text()
        above_the_button = said[said.index("On the zoo:"):said.index("Run it on the zoo")]  # not a grid's
        assert re.search(r"Time: (typically )?about \d", above_the_button), "no estimate before the click"
        examples = page.locator('input[aria-label="evaluation examples (0 = all)"]').first
        examples.fill("16")
        examples.press("Enter")
        settle(page)
        page.get_by_role("button", name="Run it on the zoo").click()
        bar = page.get_by_text(re.compile(r"job \S+: running · cells · .+ \d+/21 · \d+ s in all")).first
        bar.wait_for(timeout=180_000)
        assert "has not been run" not in page.locator("body").inner_text()
        page.wait_for_timeout(1000)
        assert in_view(bar)
        queue = JobQueue(home / "runs.sqlite")
        for job in queue.list(limit=5):  # not run to the end here: what was asked is checked
            queue.cancel(job.id)
