"""A data source: fixed train / evaluation splits, batches shaped for a model, and a check that
the data fits the model (image size, channels, classes, vocabulary) before any compute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from symalign.data.defaults import IMAGE_LEARNED_DEFAULTS

Batch = tuple[dict[str, torch.Tensor], torch.Tensor]  # model inputs, targets
IGNORE = -100  # target of a position that is not scored (cross_entropy's ignore_index)


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

    def check_model(self, model) -> None:
        from symalign.errors import SymalignError

        c = model.config
        if model.family.task != "image-classification":
            raise SymalignError(f"{self.name} is image data but the model is a {model.family.name}")
        _, ch, h, w = self.eval_x.shape
        if (ch, h, w) != (c.num_channels, c.image_size, c.image_size):
            raise SymalignError(f"{self.name} images are {ch}×{h}×{w} but the model expects "
                                f"{c.num_channels}×{c.image_size}×{c.image_size}")
        if self.num_classes > c.num_labels:
            raise SymalignError(f"{self.name} has {self.num_classes} classes but the model has {c.num_labels} outputs")

    def eval_batches(self, model, max_examples: int | None = None, batch_size: int = 512) -> Iterator[Batch]:
        n = len(self.eval_y) if max_examples is None else min(max_examples, len(self.eval_y))
        for i in range(0, n, batch_size):
            j = min(i + batch_size, n)
            yield {"pixel_values": self.eval_x[i:j]}, self.eval_y[i:j]

    def train_batch(self, model, batch_size: int, generator: torch.Generator, augment=None) -> Batch:
        idx = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)
        x = self.train_x[idx]
        return {"pixel_values": augment(x) if augment else x}, self.train_y[idx]
