"""Uploads are untrusted: a good model is kept and loads; everything else is refused with one
clear message and leaves nothing behind."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
import torch

from symalign.models import load_model, outputs, random_inputs
from symalign.models.upload import UploadError, import_upload
from symalign.zoo import resolve_zoo

ZOO = resolve_zoo("zoo:vit-digits/0")


def zipped(entries: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def model_files(folder: Path = ZOO) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def left_behind(dest: Path) -> list[Path]:
    return list(dest.iterdir()) if dest.exists() else []


def test_zip_of_a_model_directory_is_imported_and_computes_the_same_function(tmp_path):
    data = zipped({f"wrapped/{k}": v for k, v in model_files().items()})
    folder = import_upload([("my-vit.zip", data)], tmp_path / "models")
    assert folder.name == "my-vit" and folder.parent == tmp_path / "models"
    original, imported = load_model(ZOO), load_model(folder)
    x = random_inputs(original, 4)
    assert torch.allclose(outputs(original, x), outputs(imported, x))
    again = import_upload([("my-vit.zip", data)], tmp_path / "models")
    assert again.name == "my-vit-2"  # never overwrites


def test_loose_config_and_safetensors_are_imported(tmp_path):
    files = model_files()
    folder = import_upload([("config.json", files["config.json"]), ("model.safetensors", files["model.safetensors"])],
                           tmp_path / "models", name="pair")
    assert load_model(folder).dims.n_layer == 4


@pytest.mark.parametrize("case, files, message", [
    ("zip slip", lambda: [("evil.zip", zipped({"../../evil/config.json": b"{}"}))], "outside its folder"),
    ("absolute", lambda: [("evil.zip", zipped({"/etc/config.json": b"{}"}))], "outside its folder"),
    ("link", lambda: [("evil.zip", zipped({"m/config.json": b"/etc/passwd"}, links=("m/config.json",)))],
     "symbolic link"),
    ("pickle in zip", lambda: [("m.zip", zipped({"m/config.json": model_files()["config.json"],
                                                 "m/pytorch_model.bin": b"\x80\x04"}))], "pickled checkpoint"),
    ("loose pickle", lambda: [("pytorch_model.bin", b"\x80\x04")], "pickled checkpoint"),
    ("not a zip", lambda: [("m.zip", b"PK but not really")], "not a valid zip"),
    ("no config", lambda: [("m.zip", zipped({"m/readme.txt": b"hello"}))], "no config.json"),
    ("corrupt weights", lambda: [("config.json", model_files()["config.json"]),
                                 ("model.safetensors", b"\x00" * 64)], "corrupt or not a safetensors"),
    ("wrong architecture", lambda: [("config.json", json.dumps({"model_type": "t5"}).encode()),
                                    ("model.safetensors", model_files()["model.safetensors"])],
     "unsupported architecture 't5'"),
    ("weights of another family", lambda: [("config.json", json.dumps({"model_type": "bert"}).encode()),
                                           ("model.safetensors", model_files()["model.safetensors"])],
     "do not fit its config.json"),
    ("stray file", lambda: [("config.json", b"{}"), ("setup.py", b"import os")], "not part of a Hugging Face"),
    ("nothing", lambda: [], "nothing was uploaded"),
])
def test_bad_uploads_are_refused_with_a_reason_and_leave_nothing(tmp_path, case, files, message):
    dest = tmp_path / "models"
    with pytest.raises(UploadError, match=message):
        import_upload(files(), dest)
    assert left_behind(dest) == []
    assert not (tmp_path / "evil").exists()


def test_size_limits_hold_for_the_upload_and_for_what_a_zip_unpacks_to(tmp_path):
    with pytest.raises(UploadError, match="over the"):
        import_upload([("config.json", b"x" * 2048)], tmp_path / "m", max_bytes=1024)
    bomb = zipped({"m/config.json": b"\x00" * 200_000})  # compresses to a few hundred bytes
    assert len(bomb) < 1024
    with pytest.raises(UploadError, match="unpacks to"):
        import_upload([("bomb.zip", bomb)], tmp_path / "m", max_bytes=100_000)
    assert left_behind(tmp_path / "m") == []


@pytest.mark.parametrize("family", ["qwen3", "phi3", "gemma2", "opt", "distilbert", "mixtral", "clip", "olmoe",
                                    "qwen2_moe", "clip_text_model"])
def test_a_checkpoint_of_each_new_family_uploads_and_computes_the_same_function(family, tmp_path):
    """Issue #72: what users train today (Qwen3, Phi-3, Gemma 2, OPT, DistilBERT, Mixtral, CLIP) uploads as a zip
    of save_pretrained's files and loads as its own family."""
    from symalign.models import save_model
    from symalign.models.tiny import random_model, tiny_config

    original = random_model(tiny_config(family), seed=0)
    save_model(original, tmp_path / "saved")
    data = zipped({f"mine/{p.name}": p.read_bytes() for p in (tmp_path / "saved").iterdir()})
    imported = load_model(import_upload([(f"my-{family}.zip", data)], tmp_path / "models"))
    assert imported.family.name == original.family.name
    x = random_inputs(original, 2)
    assert torch.allclose(outputs(original, x), outputs(imported, x), atol=1e-5)


def test_a_clip_model_upload_becomes_its_two_towers_each_computing_its_embedding(tmp_path):
    """Issue #72: the app takes one model per side, so a CLIPModel upload is kept as its two towers with their
    projections, each a model of its own whose embedding is the pair's image or text embedding."""
    from transformers import CLIPModel

    from symalign.models.upload import import_uploads
    from tests.test_new_families import _clip_pair_checkpoint

    saved = _clip_pair_checkpoint(tmp_path / "saved", seed=1)
    data = zipped({f"clip/{p.name}": p.read_bytes() for p in saved.iterdir()})
    folders = import_uploads([("my-clip.zip", data)], tmp_path / "models")
    assert [f.name for f in folders] == ["my-clip-vision", "my-clip-text"]
    vision, text = (load_model(f) for f in folders)
    assert (vision.family.name, text.family.name) == ("clip_vision", "clip_text")
    pair = CLIPModel.from_pretrained(str(saved)).eval()
    x_image, x_text = random_inputs(vision, 2), random_inputs(text, 2)
    with torch.no_grad():  # the pair's unnormalised embeddings: each tower's projection of its pooled output
        image = pair.visual_projection(pair.vision_model(**x_image).pooler_output)
        text_embedding = pair.text_projection(pair.text_model(**x_text).pooler_output)
    assert torch.allclose(outputs(vision, x_image), image, atol=1e-5)
    assert torch.allclose(outputs(text, x_text), text_embedding, atol=1e-5)


def test_files_are_recognised_by_their_content_not_their_name(tmp_path):
    """Random bytes named junk.bin are said to be what they are (not "a pickled checkpoint", which the name
    suggested); a pickle named config.json is refused as a pickle; a zipped model directory named model.bin is
    imported as the zip it is."""
    import pickle
    import random

    junk = random.Random(0).randbytes(4096)
    with pytest.raises(UploadError) as refused:
        import_upload([("junk.bin", junk)], tmp_path / "a")
    assert "pickled" not in str(refused.value) and "neither a zip, a safetensors file nor JSON" in str(refused.value)
    with pytest.raises(UploadError, match="config.json is a pickled checkpoint"):
        import_upload([("config.json", pickle.dumps({"a": 1}))], tmp_path / "b")
    torch_archive = io.BytesIO()
    torch.save({"w": torch.zeros(2)}, torch_archive)  # a zip holding data.pkl
    with pytest.raises(UploadError, match="pickled checkpoint"):
        import_upload([("weights.zip", torch_archive.getvalue())], tmp_path / "c")
    target = import_upload([("model.bin", zipped(model_files()))], tmp_path / "d", name="m")
    assert load_model(target).family.name == load_model(ZOO).family.name
    assert not left_behind(tmp_path / "a") and not left_behind(tmp_path / "b")
