"""Load a Hugging Face model directory into logical tensors and export back, with one clear
error per thing a user can get wrong. Untrusted files are never unpickled: safetensors, or
torch.load(weights_only=True)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from symalign.errors import ModelLoadError, brief
from symalign.models.family import Family, TransformerModel
from symalign.models.bert import BERT, ROBERTA
from symalign.models.gpt2 import GPT2
from symalign.models.llama import LLAMA, MISTRAL, QWEN2
from symalign.models.vit import VIT

FAMILIES: dict[str, Family] = {f.model_type: f for f in (GPT2, VIT, LLAMA, MISTRAL, QWEN2, BERT, ROBERTA)}
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def supported() -> str:
    return ", ".join(f"{f.model_type} ({f.hf_class_name})" for f in FAMILIES.values())


def _quiet_transformers() -> None:
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("transformers").setLevel(logging.ERROR)


def read_config(path: Path):
    """The directory's config, or a ModelLoadError that says what is wrong with it."""
    if not path.exists():
        raise ModelLoadError(f"no model at {path}: expected a Hugging Face model directory (or zoo:RECIPE/SEED)")
    if not path.is_dir():
        raise ModelLoadError(f"{path} is a file: expected a Hugging Face model directory holding config.json")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{path} is not a Hugging Face model directory: config.json is missing")
    try:
        raw = json.loads(config_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{config_file} is not valid JSON ({brief(exc)})") from None
    model_type = raw.get("model_type") if isinstance(raw, dict) else None
    if model_type not in FAMILIES:
        raise ModelLoadError(f"unsupported architecture {model_type!r} in {path}; supported: {supported()}")
    family = FAMILIES[model_type]
    archs = raw.get("architectures") or [family.hf_class_name]
    if family.hf_class_name not in archs:
        raise ModelLoadError(f"{path} holds a {archs[0]}; for {model_type} symalign supports {family.hf_class_name}")
    _quiet_transformers()
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(path))
    except Exception as exc:  # transformers raises many types for a bad config
        raise ModelLoadError(f"{config_file} is not a valid {model_type} config ({brief(exc)})") from None
    family.check_config(config)
    dims = family.dims(config)
    if dims.d_model % dims.n_head:
        raise ModelLoadError(f"{path}: width {dims.d_model} is not divisible by its {dims.n_head} heads")
    return family, config


def _check_weight_files(path: Path) -> None:
    """Open every weight file safely first, so corruption gets a clear message, not a traceback."""
    present = [name for name in WEIGHT_FILES if (path / name).is_file()]
    if not present:
        raise ModelLoadError(f"{path} has no weights: expected one of {', '.join(WEIGHT_FILES)}")
    from safetensors import safe_open

    if "model.safetensors.index.json" in present:
        try:
            shards = sorted(set(json.loads((path / "model.safetensors.index.json").read_text())["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
            raise ModelLoadError(f"{path}/model.safetensors.index.json is not a valid shard index ({brief(exc)})") from None
    elif "model.safetensors" in present:
        shards = ["model.safetensors"]
    else:
        try:
            torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        except Exception as exc:
            raise ModelLoadError(
                f"refusing {path}/pytorch_model.bin: not a plain tensor checkpoint loadable with weights_only=True ({brief(exc)})"
            ) from None
        return
    for shard in shards:
        try:
            with safe_open(str(path / shard), framework="pt") as f:
                for key in f.keys():
                    f.get_slice(key)
        except Exception as exc:
            raise ModelLoadError(f"{path}/{shard} is corrupt or not a safetensors file ({brief(exc)})") from None


def load_model(path: str | Path) -> TransformerModel:
    """Load a supported Hugging Face directory (GPT-2, ViT, Llama, BERT families) (or zoo:RECIPE/SEED) into logical tensors."""
    path = resolve(path)
    family, config = read_config(path)
    _check_weight_files(path)
    try:
        module, info = family.hf_class.from_pretrained(str(path), output_loading_info=True)
    except Exception as exc:
        raise ModelLoadError(f"the weights in {path} do not fit its config.json ({brief(exc)})") from None
    missing = sorted(k for k in info.get("missing_keys", ()) if k != "lm_head.weight")
    mismatched = sorted(str(k) for k in info.get("mismatched_keys", ()))  # a list or a set, by version
    if missing or mismatched:
        raise ModelLoadError(f"the weights in {path} do not fit its config.json: missing {missing[:3]}, "
                             f"mismatched {mismatched[:3]}")
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    tensors = family.to_logical(state, module.config)
    for name, t in tensors.items():
        if not torch.isfinite(t).all():
            raise ModelLoadError(f"{path} has NaN or infinite values in {name}")
    return TransformerModel(family, module.config, tensors, str(path))


def save_model(model: TransformerModel, out: str | Path) -> Path:
    """Export as a standard Hugging Face checkpoint (safetensors) that plain transformers loads."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _quiet_transformers()
    module = model.to_module()
    module.save_pretrained(str(out))
    for extra in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "preprocessor_config.json"):
        src = Path(model.source) / extra if model.source else None
        if src is not None and src.is_file() and src.parent.resolve() != out.resolve():
            (out / extra).write_bytes(src.read_bytes())
    return out


def checkpoint_zip(folder: str | Path) -> bytes:
    """A saved checkpoint folder as zip bytes (what the app offers for download; uploads accept it)."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(Path(folder).iterdir()):
            if path.is_file():
                archive.write(path, arcname=path.name)
    return buffer.getvalue()


def resolve(path: str | Path) -> Path:
    """Turn a model reference (a directory or zoo:RECIPE/SEED) into a directory path."""
    if isinstance(path, str) and path.startswith("zoo:"):
        from symalign.zoo import resolve_zoo

        return resolve_zoo(path)
    return Path(path).expanduser()
