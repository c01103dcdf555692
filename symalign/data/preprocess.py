"""Images as a checkpoint expects them: its own size, channels and normalisation.

A data source keeps its images at their own size, normalised its own way (digits: 8×8 grey in
[−1, 1]). A checkpoint says what it wants in `preprocessor_config.json` (a ViT-B/16: 224 pixels,
bilinear, mean and std per channel), else its config's image size with transformers' ViT
defaults (mean = std = 0.5). Batches are converted when they are drawn, so a 224-pixel copy of
a whole data set is never held. A model whose shape the data already has and that names no
preprocessing of its own (the zoo) gets the images untouched."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from symalign.errors import SymalignError
from symalign.json_files import read_json_object

RESAMPLE = {0: "nearest", 2: "bilinear", 3: "bicubic"}  # PIL's codes, as preprocessor configs store them
DEFAULT_MEAN = DEFAULT_STD = 0.5  # transformers' ViTImageProcessor defaults


@dataclass(frozen=True)
class Preprocessing:
    """What a checkpoint's image processor does to pixels in [0, 1]."""

    height: int
    width: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    resample: str = "bilinear"
    resize: bool = True
    normalize: bool = True


def image_config(config):
    """The config that sizes the images: a vision tower's own (CLIP keeps it in `vision_config`), else the
    model's."""
    return getattr(config, "vision_config", None) or config


def checkpoint_preprocessing(model) -> Preprocessing | None:
    """The checkpoint's preprocessor_config.json, read as data (None when it has none)."""
    path = Path(model.source) / "preprocessor_config.json" if model.source else None
    if path is None or not path.is_file():
        return None
    raw = read_json_object(path)
    size = raw.get("size") or {}
    if isinstance(size, int):
        size = {"height": size, "width": size}
    side = image_config(model.config).image_size
    height = int(size.get("height", size.get("shortest_edge", side)))
    width = int(size.get("width", size.get("shortest_edge", side)))
    channels = image_config(model.config).num_channels
    mean, std = raw.get("image_mean", DEFAULT_MEAN), raw.get("image_std", DEFAULT_STD)
    mean = tuple(mean) if isinstance(mean, list) else (float(mean),) * channels
    std = tuple(std) if isinstance(std, list) else (float(std),) * channels
    if len(mean) != channels or len(std) != channels:
        raise SymalignError(f"{path}: image_mean/image_std have {len(mean)}/{len(std)} values for a "
                            f"{channels}-channel model")
    return Preprocessing(height, width, mean, std, RESAMPLE.get(raw.get("resample", 2), "bilinear"),
                         bool(raw.get("do_resize", True)), bool(raw.get("do_normalize", True)))


def image_converter(stored_shape: tuple[int, int, int], stored_mean: tuple[float, ...],
                    stored_std: tuple[float, ...], model) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """A function taking a batch as the data source stores it to what `model` expects, or None
    when nothing is to be done."""
    c = image_config(model.config)
    wanted = (c.num_channels, c.image_size, c.image_size)
    prep = checkpoint_preprocessing(model)
    if prep is None and tuple(stored_shape) == wanted:
        return None
    if prep is None:
        prep = Preprocessing(c.image_size, c.image_size, (DEFAULT_MEAN,) * c.num_channels,
                             (DEFAULT_STD,) * c.num_channels)
    if (prep.height, prep.width) != (c.image_size, c.image_size):
        raise SymalignError(f"the model's preprocessing makes {prep.height}×{prep.width} images but it "
                            f"takes {c.image_size}×{c.image_size}")
    channels = stored_shape[0]
    if channels not in (1, c.num_channels) and not (channels == 3 and c.num_channels == 1):
        raise SymalignError(f"the data has {channels}-channel images and the model expects {c.num_channels} channels")
    s_mean = torch.tensor(stored_mean)[:, None, None]
    s_std = torch.tensor(stored_std)[:, None, None]
    mean, std = torch.tensor(prep.mean)[:, None, None], torch.tensor(prep.std)[:, None, None]

    def convert(x: torch.Tensor) -> torch.Tensor:
        pixels = (x * s_std + s_mean).clamp(0, 1)  # back to [0, 1]
        if pixels.shape[1] != c.num_channels:
            pixels = pixels.expand(-1, c.num_channels, -1, -1) if pixels.shape[1] == 1 else pixels.mean(1, keepdim=True)
        if prep.resize and pixels.shape[-2:] != (prep.height, prep.width):
            smooth = prep.resample != "nearest"
            pixels = torch.nn.functional.interpolate(pixels, size=(prep.height, prep.width), mode=prep.resample,
                                                     antialias=smooth, **({"align_corners": False} if smooth else {}))
        return ((pixels - mean) / std if prep.normalize else pixels).contiguous()

    return convert
