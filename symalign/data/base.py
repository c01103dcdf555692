"""A data source: fixed train / evaluation splits, batches shaped for a model, and a check that
the data fits the model (image size, channels, classes, vocabulary) before any compute."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from symalign.data.defaults import IMAGE_LEARNED_DEFAULTS
from symalign.data.preprocess import image_config

Batch = tuple[dict[str, torch.Tensor], torch.Tensor]  # model inputs, targets
IGNORE = -100  # target of a position that is not scored (cross_entropy's ignore_index)
LOSSLESS_TASKS = ("text-embedding", "image-embedding")  # no task loss of their own (CLIP's towers, apart)


def readable_file(where: str, path: str) -> Path:
    """The file a `text:`, `csv:`, `tsv:` or `jsonl:` spec names (`where`: the spec, for the message);
    a folder is told apart from a missing path, since a folder is the likelier slip."""
    from symalign.errors import SymalignError

    p = Path(path).expanduser()
    if p.is_dir():
        raise SymalignError(f"{where}: is a folder; this spec reads one file")
    if not p.is_file():
        raise SymalignError(f"{where}: no such file")
    return p


def check_task(data_name: str, model) -> None:
    """Refuse any data for a model that has no loss to score it on, saying what still works without data
    (every data source checks this first, so the message is one and the same wherever it is met)."""
    from symalign.errors import SymalignError

    if model.family.task in LOSSLESS_TASKS:
        raise SymalignError(f"{data_name}: a {model.family.title or model.family.name} has no task loss of its "
                            "own to score, so barriers, activation and learned matching cannot run on it; weight "
                            "matching, canonicalize, transform and export need no data")


@dataclass
class ImageData:
    """Images as float tensors [N, C, H, W] (already normalised) with integer labels."""

    # Learned matching on images: 1,437 digits are few enough that the transform over-fits them
    # (training-path loss ≈ 0.003, evaluation barrier 0.02–0.12 by matcher seed); Gaussian input
    # noise on the training batches and a longer schedule make it generalise (docs/matching.md).
    LEARNED_DEFAULTS = IMAGE_LEARNED_DEFAULTS

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    eval_x: torch.Tensor
    eval_y: torch.Tensor
    num_classes: int
    family: str = "vit"
    # How the stored images were normalised from pixels in [0, 1] (per channel): what lets a batch
    # be re-expressed for a checkpoint that wants another size or normalisation (data.preprocess).
    pixel_mean: tuple[float, ...] = (0.5,)
    pixel_std: tuple[float, ...] = (0.5,)

    def converter(self, model):
        """None when the model takes the images as stored, else the per-batch conversion."""
        from symalign.data.preprocess import image_converter

        channels = self.eval_x.shape[1]
        mean = self.pixel_mean * channels if len(self.pixel_mean) == 1 else self.pixel_mean
        std = self.pixel_std * channels if len(self.pixel_std) == 1 else self.pixel_std
        return image_converter(tuple(self.eval_x.shape[1:]), mean, std, model)

    def check_model(self, model) -> None:
        from symalign.errors import SymalignError

        c = model.config
        check_task(self.name, model)
        if model.family.task != "image-classification":
            raise SymalignError(f"{self.name} is image data but the model is a {model.family.name}")
        self.converter(model)  # refuses what cannot be converted (channels, a processor at odds with the config)
        if self.num_classes > c.num_labels:
            raise SymalignError(f"{self.name} has {self.num_classes} classes but the model has {c.num_labels} outputs")

    def eval_batches(self, model, max_examples: int | None = None, batch_size: int = 512) -> Iterator[Batch]:
        n = len(self.eval_y) if max_examples is None else min(max_examples, len(self.eval_y))
        convert = self.converter(model)
        batch_size = activation_bounded(batch_size, model)
        for i in range(0, n, batch_size):
            j = min(i + batch_size, n)
            x = self.eval_x[i:j]
            yield {"pixel_values": convert(x) if convert else x}, self.eval_y[i:j]

    def train_batch(self, model, batch_size: int, generator: torch.Generator, augment=None) -> Batch:
        idx = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)
        x = self.train_x[idx]
        x = augment(x) if augment else x
        convert = self.converter(model)
        return {"pixel_values": convert(x) if convert else x}, self.train_y[idx]


EVAL_ACTIVATION_FLOATS = 64 * 2**20  # per evaluation batch: the widest activation (MLP hidden) of every image


def activation_bounded(batch_size: int, model) -> int:
    """Fewer images per evaluation batch when each is large (a ViT-B's 197 positions × 3,072 MLP
    units); the zoo's 17-position digits keep 512, so their numbers do not move."""
    c, d = image_config(model.config), model.dims
    positions = (c.image_size // c.patch_size) ** 2 + 1
    return max(1, min(batch_size, EVAL_ACTIVATION_FLOATS // (positions * max(d.d_mlp, 4 * d.d_model))))
