"""Load a Hugging Face model directory into logical tensors and export back, with one clear
error per thing a user can get wrong. Untrusted files are never unpickled: safetensors, or
torch.load(weights_only=True)."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import torch

from symalign.errors import ModelLoadError, SymalignError, brief
from symalign.json_files import read_json_object
from symalign.memory import return_freed_memory
from symalign.models.families import collect
from symalign.models.family import Family, TransformerModel
from symalign.models.finite import require_finite_tensors
from symalign.models.hub import is_hub_id, resolve_hub_id
from symalign.models.loaded import LOADED
from symalign.zoo import inside_zoo, zoo_dir

FAMILIES: dict[str, Family] = collect()  # every adapter in symalign/models/families
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def supported() -> str:
    return ", ".join(f"{f.model_type} ({f.hf_class_name})" for f in FAMILIES.values())


# Architectures refused with the reason, where one is known (docs/families.md): what a user uploads that the
# spec cannot describe, and why, instead of "unsupported".
REFUSED = {
    "deberta-v2": ("DeBERTa-v2/v3 is not built: its disentangled attention adds relative-position projections "
                   "that must take the same QK map as the content's (separate tensors unless share_att_key), and "
                   "its relative-position table is one more residual tensor; docs/families.md says what it "
                   "admits"),
    "CLIPModel": ("a CLIPModel has two towers, each with its own residual stream, projected into one embedding "
                  "space, and symalign's spec has one residual stream: `symalign align A B` aligns a CLIPModel "
                  "pair tower by tower and then the shared embedding space (weight matching); other commands take "
                  "one tower (CLIPVisionModelWithProjection, CLIPTextModelWithProjection, "
                  "CLIPForImageClassification)"),
    "CLIPTextModel": ("CLIP's text tower without its projection outputs the residual stream itself, in its own "
                      "basis; save it as CLIPTextModelWithProjection (text_projection), whose embedding a "
                      "transform keeps"),
}


def family_for(model_type: str | None, architectures: list[str] | None = None) -> Family:
    """The family of a config: its model type, and among that type's families (a language model, a
    sequence classifier) the one its `architectures` names (none named: the type's first)."""
    candidates = [f for f in FAMILIES.values() if f.model_type == model_type]
    named = [REFUSED[a] for a in (model_type, *(architectures or ())) if a in REFUSED]
    if named and not any(f.hf_class_name in (architectures or ()) for f in candidates):
        raise ModelLoadError(f"unsupported {model_type} model: {named[0]}")
    if not candidates:
        raise ModelLoadError(f"unsupported architecture {model_type!r}; supported: {supported()}")
    if not architectures:
        return candidates[0]
    for family in candidates:
        if family.hf_class_name in architectures:
            return family
    raise ModelLoadError(f"this {model_type} model is a {architectures[0]}; for {model_type} symalign supports "
                         f"{', '.join(f.hf_class_name for f in candidates)}")


def family_of(config) -> Family:
    """The family of a transformers config object."""
    return family_for(config.model_type, getattr(config, "architectures", None))


def _quiet_transformers() -> None:
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("transformers").setLevel(logging.ERROR)


def read_config(path: Path):
    """The directory's config, or a ModelLoadError that says what is wrong with it."""
    if not path.exists():
        raise ModelLoadError(f"no model at {path}: expected a Hugging Face model directory, zoo:RECIPE/SEED "
                             "or a hub id org/name[@revision]")
    if not path.is_dir():
        raise ModelLoadError(f"{path} is a file: expected a Hugging Face model directory holding config.json")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{path} is not a Hugging Face model directory: config.json is missing")
    raw = read_json_object(config_file, ModelLoadError)
    model_type, architectures = raw.get("model_type"), raw.get("architectures")
    if isinstance(architectures, str):  # one class named without its list
        architectures = [architectures]
    if not (model_type is None or isinstance(model_type, str)) or not (
            architectures is None or (isinstance(architectures, list) and all(isinstance(a, str)
                                                                               for a in architectures))):
        raise ModelLoadError(f"{config_file}: model_type must be a string and architectures a list of class names; "
                             f"got {model_type!r} and {architectures!r}")
    try:
        family = family_for(model_type, architectures)
    except ModelLoadError as exc:
        raise ModelLoadError(f"{path}: {exc}") from None
    _quiet_transformers()
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(path))
    except Exception as exc:  # transformers raises many types for a bad config
        raise ModelLoadError(f"{config_file} is not a valid {model_type} config ({brief(exc)})") from None
    check_layout(path, family, config)
    return family, config


def check_layout(path: Path, family: Family, config) -> None:
    """What a config must satisfy before its weights are read: the family's own checks, and heads that split
    the width (every family's)."""
    family.check_config(config)
    dims = family.dims(config)
    sizes = {"layers": dims.n_layer, "heads": dims.n_head, "width": dims.d_model, "MLP width": dims.d_mlp}
    for what, size in sizes.items():
        if not isinstance(size, int) or size < 1:
            raise ModelLoadError(f"{path}: its config.json gives {size!r} {what}; a model has at least one")
    from transformers.activations import ACT2FN

    if dims.activation not in ACT2FN:  # else a KeyError while the module is built, read as "weights do not fit"
        raise ModelLoadError(f"{path}: its config.json names the activation {dims.activation!r}, which transformers "
                             "does not know")
    if dims.d_model % dims.n_head:
        raise ModelLoadError(f"{path}: width {dims.d_model} is not divisible by its {dims.n_head} heads")


def _mismatch(key) -> str:
    """One mismatched tensor as transformers reports it: a name, or (name, checkpoint shape, config shape)."""
    if isinstance(key, tuple) and len(key) == 3:
        name, stored, wanted = key
        return f"{name} (checkpoint {list(stored)}, config {list(wanted)})"
    return str(key)


def _check_weight_files(path: Path) -> tuple[torch.dtype, dict[str, str], int]:
    """Open every weight file safely first, so corruption gets a clear message, not a traceback.
    Returns the checkpoint's storage precision (the dtype most of its floating-point values have),
    the tensors stored in a type that is not floating point, by name (buffers such as position_ids
    may be; a parameter may not: load_as checks), and how many floating-point values it holds."""
    present = [name for name in WEIGHT_FILES if (path / name).is_file()]
    if not present:
        raise ModelLoadError(f"{path} has no weights: expected one of {', '.join(WEIGHT_FILES)}")
    from safetensors import safe_open

    if "model.safetensors.index.json" in present:
        try:
            shards = sorted(set(json.loads((path / "model.safetensors.index.json").read_text())["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
            raise ModelLoadError(f"{path}/model.safetensors.index.json is not a valid shard index "
                                 f"({brief(exc)})") from None
    elif "model.safetensors" in present:
        shards = ["model.safetensors"]
    else:
        try:
            state = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        except Exception as exc:
            raise ModelLoadError(
                f"refusing {path}/pytorch_model.bin: not a plain tensor checkpoint loadable with "
                f"weights_only=True ({brief(exc)})"
            ) from None
        tensors = {k: v for k, v in state.items() if torch.is_tensor(v)}
        sizes: dict[torch.dtype, int] = {}
        for v in tensors.values():
            sizes[v.dtype] = sizes.get(v.dtype, 0) + v.numel()
        return (_storage_dtype(sizes),
                {k: str(v.dtype).removeprefix("torch.") for k, v in tensors.items() if not v.is_floating_point()},
                sum(n for d, n in sizes.items() if d.is_floating_point))
    sizes = {}
    other: dict[str, str] = {}
    values = 0
    for shard in shards:
        try:
            with safe_open(str(path / shard), framework="pt") as f:
                for key in f.keys():
                    piece = f.get_slice(key)
                    kind, count = piece.get_dtype(), math.prod(piece.get_shape())
                    if not kind.startswith(("F", "BF")):  # F8_E4M3 and kin are floating point too
                        other[key] = kind
                        continue
                    values += count
                    if (dtype := SAFETENSORS_DTYPES.get(kind)) is not None:
                        sizes[dtype] = sizes.get(dtype, 0) + count
        except Exception as exc:
            raise ModelLoadError(f"{path}/{shard} is corrupt or not a safetensors file ({brief(exc)})") from None
    return _storage_dtype(sizes), other, values


SAFETENSORS_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "F64": torch.float64}


def _storage_dtype(sizes: dict) -> torch.dtype:
    floating = {d: n for d, n in sizes.items() if d.is_floating_point}
    return max(floating, key=floating.get) if floating else torch.float32


def load_model(path: str | Path) -> TransformerModel:
    """Load a supported Hugging Face model (a directory, zoo:RECIPE/SEED or a hub id) into logical
    tensors. Every checkpoint is computed on in float32 whatever it is stored in (bf16 matching
    loses the small differences that matter); its storage dtype is kept for export. The module
    transformers builds is dropped at once: the logical tensors share its storage (no second copy)."""
    path = resolve(path)
    return LOADED.get(path, lambda: load_as(path, read_config(path)[0]))  # small ones: loaded once a process


def load_as(path: Path, family: Family, config=None) -> TransformerModel:
    """The checkpoint at `path` read as `family` (with `config` where it is not the directory's own: one tower
    of a CLIPModel, whose weights sit under the names the tower's class reads, beside the other tower's)."""
    stored, not_floating, values = _check_weight_files(path)
    # a real checkpoint: freed tensors go back to the system; the zoo's keep glibc's own policy (symalign.memory)
    return_freed_memory(values)
    given = {} if config is None else {"config": config}
    try:
        # ignore_mismatched_sizes: transformers then lists the mismatched tensors in `info` (checked below) instead
        # of raising "look at the above report", a report the user never sees
        module, info = family.hf_class.from_pretrained(str(path), output_loading_info=True, dtype=torch.float32,
                                                       ignore_mismatched_sizes=True, **given)
    except Exception as exc:
        raise ModelLoadError(f"the weights in {path} do not fit its config.json ({brief(exc)})") from None
    missing = sorted(k for k in info.get("missing_keys", ()) if k != "lm_head.weight")
    mismatched = sorted(_mismatch(k) for k in info.get("mismatched_keys", ()))  # a list or a set, by version
    if missing or mismatched:
        parts = [f"{label} {', '.join(names[:3])}{' …' if len(names) > 3 else ''}"
                 for label, names in (("missing", missing), ("of another shape", mismatched)) if names]
        raise ModelLoadError(f"the weights in {path} do not fit its config.json: {'; '.join(parts)}")
    wrong = sorted(set(not_floating) & {name for name, _ in module.named_parameters()})
    if wrong:  # transformers casts them silently: booleans became 0 and 1, integers lost their fractions
        raise ModelLoadError(f"{path}: {wrong[0]} is stored as {not_floating[wrong[0]]}, not floating point; a "
                             "model's weights are floats (F32, BF16, F16 or F64)")
    config = module.config
    try:
        tensors = family.to_logical(module.state_dict(), config)
    except KeyError as exc:  # e.g. num_labels ≤ 0: transformers builds no classifier for the weights to go in
        raise ModelLoadError(f"{path}: its config.json builds a model without {exc.args[0]}; check its sizes "
                             "(num_labels, vocab_size, ...)") from None
    del module
    require_finite_tensors(tensors, str(path), error=ModelLoadError)
    return TransformerModel(family, config, tensors, str(path), dtype=stored)


# What makes a checkpoint usable beside its weights: tokenizer (fast and slow files) and image preprocessing.
COMPANION_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                   "vocab.txt", "tokenizer.model", "preprocessor_config.json")
SHARD_SIZE = "200MB"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}  # EXPORT_DTYPES but auto


def export_dtype(model: TransformerModel, choice: str = "auto") -> torch.dtype:
    """`auto`: the precision the model was stored in (a bf16 checkpoint comes out bf16)."""
    if choice == "auto":
        return model.dtype
    if choice not in DTYPES:
        raise ModelLoadError(f"unknown dtype {choice!r}; choose auto, {', '.join(DTYPES)}")
    return DTYPES[choice]


def export_module(model: TransformerModel, dtype: torch.dtype) -> torch.nn.Module:
    """A module to save, holding the weights in `dtype` without a second full copy: built without
    initialisation, then given the converted tensors themselves (assign). For export only: its
    parameters may share memory with the model's tensors, so it must never be trained."""
    from transformers.initialization import no_init_weights

    config = model.config.__class__.from_dict(model.config.to_dict())
    config.dtype = dtype
    with no_init_weights():  # built in `dtype` and never written: its memory is not touched before assign
        module = model.family.hf_class._from_config(config, dtype=dtype)
    logical = {k: v.to(dtype) for k, v in model.tensors.items()}  # rounded once; the layout change moves no values
    state = {k: v.contiguous() for k, v in model.family.from_logical(logical, config).items()}
    del logical
    seen: set[int] = set()
    for name, value in state.items():  # one tensor under two names (an untied head still equal to the embedding:
        if value.data_ptr() in seen:  # OPT's behind project_out) would be saved once and reloaded as random
            state[name] = value.clone()
        seen.add(value.data_ptr())
    missing, unexpected = module.load_state_dict(state, strict=False, assign=True)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"layout mismatch: missing {missing}, unexpected {unexpected}")
    if tied:
        module.tie_weights()
    return module.eval()


def save_model(model: TransformerModel, out: str | Path, dtype: str = "auto") -> Path:
    """Export as a standard Hugging Face checkpoint (safetensors) that plain transformers loads,
    in the model's own storage precision unless `dtype` names another."""
    target = export_dtype(model, dtype)
    out = Path(out)
    if inside_zoo(out):  # the API's guard too (the CLI refuses such an --out before any work: symalign.output_folder)
        raise SymalignError(f"{out} is inside the shipped zoo ({zoo_dir()}): writing there would replace a shipped "
                            "model; save elsewhere")
    out.mkdir(parents=True, exist_ok=True)
    _quiet_transformers()
    module = export_module(model, target)
    # safetensors serialises a whole file in memory before writing it: shards of at most SHARD_SIZE
    # bound that copy (a model under it is one model.safetensors, as before).
    module.save_pretrained(str(out), max_shard_size=SHARD_SIZE)
    del module
    if model.source:
        copy_companions(Path(model.source), out)
    return out


def copy_companions(source: Path, out: Path) -> None:
    """The tokenizer and preprocessing files of the checkpoint in `source`, copied beside its weights in `out`."""
    for extra in COMPANION_FILES:
        src = source / extra
        if src.is_file() and src.parent.resolve() != out.resolve():
            (out / extra).write_bytes(src.read_bytes())


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
    """Turn a model reference into a directory: zoo:RECIPE/SEED, a local directory, or a hub id
    (org/name[@revision]) through huggingface_hub; a local directory of that name wins."""
    if isinstance(path, str) and path.startswith("zoo:"):
        from symalign.zoo import resolve_zoo

        return resolve_zoo(path)
    local = Path(path).expanduser()
    if isinstance(path, str) and not local.exists() and is_hub_id(path):
        return resolve_hub_id(path)
    return local


def default_data_spec(model: TransformerModel) -> str:
    """The data a model was trained on (training.json in its directory), else a clear error: what a
    barrier or an alignment is measured on when no data is named."""
    record = Path(model.source) / "training.json" if model.source else None
    if record is not None and record.is_file():
        spec = read_json_object(record).get("data")
        if spec and isinstance(spec, str):
            return spec
        if spec:
            raise SymalignError(f"{record}: its data is {spec!r}, not a data spec; name one with --data")
    raise SymalignError(f"no --data given and {model.source or 'the model'} records no training data; "
                        "name one with --data (digits, shakespeare, cifar10:PATH, ...)")
