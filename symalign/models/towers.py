"""A checkpoint of two towers whose projections meet in one embedding space (CLIPModel), read as the two
models symalign knows (each tower with its projection: clip_vision_model, clip_text_model) and written back.

Why not one spec: each tower has its own residual stream, widths and norms, and symalign's spec has one
residual stream. The towers share no hidden space but the embedding space their projections write, so a
pair is aligned tower by tower plus one map of that space (symalign.match.two_towers). Each tower's own
transformers class reads its weights straight from the pair's checkpoint (vision_model.*, visual_projection
and text_model.*, text_projection are its names), given its part of the pair's config."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from symalign.errors import ModelLoadError
from symalign.models.family import TransformerModel
from symalign.models.io import COMPANION_FILES, check_layout, family_for, load_as, resolve


@dataclass(frozen=True)
class Tower:
    """One tower of a pair: where the pair's config keeps its config, and the class that reads it alone."""

    name: str
    config_key: str
    architecture: str


@dataclass(frozen=True)
class TwoTowers:
    """A two-tower architecture: its towers, in order, and the config field sizing the shared space."""

    architecture: str
    towers: tuple[Tower, ...]
    shared_size: str = "projection_dim"


TWO_TOWERS = {
    "CLIPModel": TwoTowers("CLIPModel", (Tower("vision", "vision_config", "CLIPVisionModelWithProjection"),
                                         Tower("text", "text_config", "CLIPTextModelWithProjection"))),
}


def two_towers_of(path: str | Path) -> TwoTowers | None:
    """The two-tower architecture of a checkpoint directory (None for any other model or path)."""
    try:
        config_file = resolve(path) / "config.json"
        raw = json.loads(config_file.read_text()) if config_file.is_file() else {}
    except (OSError, ValueError, ModelLoadError):
        return None
    names = raw.get("architectures") or [] if isinstance(raw, dict) else []
    return next((TWO_TOWERS[a] for a in names if a in TWO_TOWERS), None)


def tower_config(pair_config, pair: TwoTowers, tower: Tower):
    """The tower's own config: its part of the pair's, with the shared space's size the pair declares."""
    part = getattr(pair_config, tower.config_key)
    config = part.__class__.from_dict({**part.to_dict(), pair.shared_size: getattr(pair_config, pair.shared_size)})
    config.architectures = [tower.architecture]
    return config


def load_towers(path: str | Path) -> dict[str, TransformerModel]:
    """{tower name: the tower with its projection} of a two-tower checkpoint, in the pair's tower order."""
    from transformers import AutoConfig

    path = resolve(path)
    pair = two_towers_of(path)
    if pair is None:
        raise ModelLoadError(f"{path} is not a two-tower checkpoint ({', '.join(TWO_TOWERS)})")
    try:
        pair_config = AutoConfig.from_pretrained(str(path))
    except Exception as exc:  # transformers raises many types for a bad config
        raise ModelLoadError(f"{path}/config.json is not a valid {pair.architecture} config ({exc})") from None
    out = {}
    for tower in pair.towers:
        config = tower_config(pair_config, pair, tower)
        family = family_for(config.model_type, config.architectures)
        check_layout(path, family, config)
        out[tower.name] = load_as(path, family, config)
    return out


def save_towers(towers: dict[str, TransformerModel], template: str | Path, out: str | Path) -> Path:
    """The pair checkpoint at `template` with its towers' weights replaced by `towers` (every other tensor, such
    as CLIP's logit scale, kept), saved where plain transformers loads it, in the template's precision."""
    import transformers

    template, out = resolve(template), Path(out)
    pair = two_towers_of(template)
    module = getattr(transformers, pair.architecture).from_pretrained(str(template), dtype=torch.float32)
    stored = next(iter(towers.values())).dtype
    state = {}
    for model in towers.values():
        state.update(model.family.from_logical(model.tensors, model.config))
    _, unexpected = module.load_state_dict(state, strict=False)  # what no tower names (logit scale) stays
    if unexpected:
        raise RuntimeError(f"tower layout mismatch: unexpected {unexpected[:3]}")
    out.mkdir(parents=True, exist_ok=True)
    module.to(stored).save_pretrained(str(out))
    for extra in COMPANION_FILES:
        if (template / extra).is_file() and template.resolve() != out.resolve():
            (out / extra).write_bytes((template / extra).read_bytes())
    return out
