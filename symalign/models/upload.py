"""Import an uploaded model safely: a zip of a Hugging Face directory, or safetensors +
config.json sent as separate files.

Uploads are untrusted: sizes are capped (also the unpacked size, against zip bombs), zip member
paths may not leave the target folder (no absolute paths, no `..`, no links), pickled weights
are refused outright (only safetensors), and the result must load as a supported architecture
before it is kept. Files are recognised by their content (a zip's, a safetensors header, pickle's
opcodes), never by their name. Any failure leaves nothing behind and says what is wrong in one line."""

from __future__ import annotations

import re
import shutil
import stat
import tempfile
import zipfile
from io import BytesIO
from pathlib import Path, PurePosixPath

from symalign.errors import ModelLoadError, SymalignError
from symalign.models.io import load_model, save_model
from symalign.models.towers import load_towers, two_towers_of

MAX_UPLOAD_BYTES = 512 * 1024 * 1024
ALLOWED_FILES = re.compile(r"^(config\.json|model(-\d+-of-\d+)?\.safetensors|model\.safetensors\.index\.json|"
                           r"tokenizer(_config)?\.json|special_tokens_map\.json|preprocessor_config\.json|"
                           r"generation_config\.json|training\.json|vocab\.json|merges\.txt|README\.md)$")


class UploadError(SymalignError):
    """An upload that cannot be imported (the message says why)."""


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")
    return cleaned[:64] or "model"


def content_kind(head: bytes) -> str:
    """What a file is by its first bytes: zip, pickle, safetensors, json or unknown. torch.save writes a zip
    holding a pickle, and pickles of protocol 2 and up start with the PROTO opcode (0x80) and their version."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"
    if len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 1 << 32:
        return "safetensors"
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    return "unknown"


def _refuse_pickle(name: str, head: bytes) -> None:
    """Refuse a pickled checkpoint, or a torch.save archive (a zip holding one), by content."""
    if content_kind(head) in ("pickle", "zip"):
        raise UploadError(f"{name} is a pickled checkpoint, which symalign never loads from an upload "
                          "(unpickling runs code); save the model with safetensors "
                          "(`model.save_pretrained(dir)` does by default) and upload that")


def _extract_zip(data: bytes, target: Path, max_bytes: int) -> None:
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except zipfile.BadZipFile:
        raise UploadError("the upload is not a valid zip archive") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > 200:
            raise UploadError(f"the zip holds {len(members)} files; a model directory needs a handful")
        total = sum(m.file_size for m in members)
        if total > max_bytes:
            raise UploadError(f"the zip unpacks to {total / 2**20:.0f} MiB, over the {max_bytes / 2**20:.0f} MiB "
                              "limit; link a local directory instead")
        for member in members:
            path = PurePosixPath(member.filename.replace("\\", "/"))
            if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", member.filename):
                raise UploadError(f"the zip member {member.filename!r} points outside its folder; refusing the archive")
            if stat.S_ISLNK(member.external_attr >> 16):
                raise UploadError(f"the zip member {member.filename!r} is a symbolic link; refusing the archive")
            if path.parts and path.parts[0] == "__MACOSX":
                continue
            dest = target.joinpath(*path.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(dest, "wb") as out:
                _refuse_pickle(path.name, src.peek(16)[:16] if hasattr(src, "peek") else b"")
                shutil.copyfileobj(src, out)


def _is_torch_archive(data: bytes) -> bool:
    """A zip that torch.save wrote (a folder holding data.pkl), not a zipped model directory."""
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            return any(PurePosixPath(n).name == "data.pkl" for n in archive.namelist())
    except zipfile.BadZipFile:
        return False


def _described(kind: str) -> str:
    return {"safetensors": "a safetensors file", "json": "a JSON file", "zip": "a zip archive",
            "unknown": "neither a zip, a safetensors file nor JSON"}.get(kind, kind)


def _model_root(folder: Path) -> Path:
    """The folder holding config.json: the top, or the single folder a zip wrapped it in."""
    if (folder / "config.json").is_file():
        return folder
    found = [p.parent for p in folder.rglob("config.json")]
    if len(found) == 1:
        return found[0]
    if not found:
        raise UploadError("the upload holds no config.json: upload a whole Hugging Face model directory "
                          "(config.json + model.safetensors), zipped, or the two files together")
    raise UploadError("the upload holds several config.json files; upload one model at a time")


def import_upload(files: list[tuple[str, bytes]], dest_root: str | Path, name: str | None = None,
                  max_bytes: int = MAX_UPLOAD_BYTES) -> Path:
    """Check and keep an uploaded model under `dest_root/<name>`; return its directory (a two-tower
    upload's first tower: `import_uploads` gives both)."""
    return import_uploads(files, dest_root, name, max_bytes)[0]


def import_uploads(files: list[tuple[str, bytes]], dest_root: str | Path, name: str | None = None,
                   max_bytes: int = MAX_UPLOAD_BYTES) -> list[Path]:
    """Check and keep an uploaded model under `dest_root/<name>`; return the directories it became (one, or a
    two-tower checkpoint's towers)."""
    if not files:
        raise UploadError("nothing was uploaded")
    size = sum(len(data) for _, data in files)
    if size > max_bytes:
        raise UploadError(f"the upload is {size / 2**20:.0f} MiB, over the {max_bytes / 2**20:.0f} MiB limit; "
                          "link a local directory instead")
    dest_root = Path(dest_root)
    dest_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_root, prefix=".upload-") as tmp:
        staging = Path(tmp) / "model"
        staging.mkdir()
        kinds = [content_kind(data[:16]) for _, data in files]
        zips = [f for f, kind in zip(files, kinds) if kind == "zip" and not _is_torch_archive(f[1])]
        if zips:
            if len(files) > 1:
                raise UploadError("upload either one zip or loose files (config.json + model.safetensors), not both")
            _extract_zip(zips[0][1], staging, max_bytes)
        else:
            for (filename, data), kind in zip(files, kinds):
                base = Path(filename).name
                _refuse_pickle(base, data[:16])
                if base.lower().endswith(".zip"):
                    raise UploadError(f"{base} is not a valid zip archive (by its content: {_described(kind)})")
                if kind == "safetensors" and not base.endswith(".safetensors") and len(files) <= 2:
                    base = "model.safetensors"  # weights under another name: recognised by their header
                if not ALLOWED_FILES.match(base):
                    raise UploadError(f"{base} is not part of a Hugging Face model directory (by its content: "
                                      f"{_described(kind)}); expected config.json, model.safetensors and "
                                      "optionally tokenizer files")
                (staging / base).write_bytes(data)
        root = _model_root(staging)
        if two_towers_of(root) is not None:
            return _import_towers(root, dest_root, name or (Path(zips[0][0]).stem if zips else "pair-upload"))
        try:
            model = load_model(root)
        except ModelLoadError as exc:
            raise UploadError(f"the uploaded model cannot be used: {exc}".replace(str(root), "the upload")) from None
        target = _free_name(dest_root, name or (Path(zips[0][0]).stem if zips else f"{model.family.model_type}-upload"))
        shutil.move(str(root), str(target))
    return [target]


def _free_name(dest_root: Path, wanted: str) -> Path:
    """dest_root/<wanted, made safe>, numbered when taken."""
    stem = _safe_name(wanted)
    target, n = dest_root / stem, 1
    while target.exists():
        n += 1
        target = dest_root / f"{stem}-{n}"
    return target


def _import_towers(root: Path, dest_root: Path, wanted: str) -> list[Path]:
    """A two-tower upload (CLIPModel) kept as its towers, each a model of its own (<name>-vision,
    <name>-text): the app's pages take one model per side; the pair itself aligns with `symalign align`."""
    try:
        towers = load_towers(root)
    except ModelLoadError as exc:
        raise UploadError(f"the uploaded model cannot be used: {exc}".replace(str(root), "the upload")) from None
    return [save_model(tower, _free_name(dest_root, f"{wanted}-{tower_name}")) for tower_name, tower in towers.items()]
