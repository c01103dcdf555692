"""Issue #72 in chromium: a checkpoint of a new family uploaded on the Models page (a zip of
save_pretrained's files) is offered in the model pickers, and the Symmetries page shows its components,
classes and the reasons for its refusals (Qwen3's per-head q/k norm, CLIP's stream-writing LayerNorm)."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from browser_support import chromium, require_chromium, served_app

pytestmark = pytest.mark.slow

require_chromium()

CASES = (("qwen3", "q_norm"), ("clip", "pre_layrnorm"))


def zipped_checkpoint(family: str, folder) -> bytes:
    from symalign.models import save_model
    from symalign.models.tiny import random_model, tiny_config

    save_model(random_model(tiny_config(family), seed=0), folder)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in folder.iterdir():
            z.write(path, f"my-{family}/{path.name}")
    return buffer.getvalue()


def test_new_families_upload_and_show_their_symmetries(tmp_path):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        for family, reason in CASES:
            upload = tmp_path / f"my-{family}.zip"
            upload.write_bytes(zipped_checkpoint(family, tmp_path / family))
            page.goto(f"{url}/models")
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(upload))
            page.get_by_text(f"my-{family}.zip").first.wait_for(timeout=30_000)
            page.get_by_role("button", name="Import").click()
            page.get_by_text(re.compile(rf"imported my-{family}")).first.wait_for(timeout=60_000)
            page.goto(f"{url}/symmetries")
            picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="model").first
            picker.wait_for(timeout=60_000)
            picker.click()
            page.keyboard.type(f"my-{family}")  # the list is long and virtual: type to filter it
            page.get_by_role("option", name=re.compile(f"my-{family}")).first.click()
            page.get_by_text(reason).first.wait_for(timeout=60_000)
            assert page.get_by_text("Traceback").count() == 0
            assert page.get_by_text("Classes per component").count() == 1
