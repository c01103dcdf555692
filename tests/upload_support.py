"""Shared by the family tests: upload a zoo model as a user would (a zip) and align a zoo model to it."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from symalign.match.config import AlignConfig
from symalign.models import load_model
from symalign.models.upload import import_upload
from symalign.zoo import resolve_zoo


def upload_and_align(reference: str, uploaded: str, folder_name: str, tmp_path: Path, measure: bool = True):
    """Zip the zoo model `uploaded` under `folder_name/`, import it, and weight-align `reference` to it
    with every class the family admits (and, with `measure`, the barrier on 16 examples). Returns (the
    loaded upload, the align run)."""
    from symalign.workflows.execute import align_run

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for f in resolve_zoo(uploaded).iterdir():
            archive.writestr(f"{folder_name}/{f.name}", f.read_bytes())
    folder = import_upload([(f"{folder_name}.zip", buffer.getvalue())], tmp_path / "models")
    run = align_run(reference, folder, AlignConfig(method="weight", preset="all"), out=tmp_path / "aligned",
                    max_examples=16, measure=measure)
    return load_model(folder), run
