"""Evaluation and training data, named by a spec string: digits, shakespeare, cifar10:PATH,
cifar100:PATH, imagefolder:PATH, text:PATH."""

from __future__ import annotations

from symalign.data.base import ImageData
from symalign.data.text import TextData
from symalign.errors import SymalignError

IMAGE_KINDS = ("digits", "cifar10", "cifar100", "imagefolder")
SPECS = "digits, shakespeare, cifar10:PATH, cifar100:PATH, imagefolder:PATH, text:PATH"
_cache: dict[str, ImageData | TextData] = {}


def load_data(spec: str) -> ImageData | TextData:
    """The data source for a spec (cached per process: splits are fixed, so reuse is safe)."""
    if spec in _cache:
        return _cache[spec]
    from symalign.data import images, text

    kind, _, path = spec.partition(":")
    if kind in ("digits", "shakespeare") and path:
        raise SymalignError(f"data spec {spec!r}: {kind} takes no path")
    if kind in ("cifar10", "cifar100", "imagefolder", "text") and not path:
        raise SymalignError(f"data spec {spec!r}: {kind} needs a path, as in {kind}:PATH")
    loaders = {
        "digits": images.digits,
        "shakespeare": lambda: TextData("shakespeare", text.shakespeare_text()),
        "cifar10": lambda: images.cifar("cifar10", path),
        "cifar100": lambda: images.cifar("cifar100", path),
        "imagefolder": lambda: images.imagefolder(path),
        "text": lambda: text.text_file(path),
    }
    if kind not in loaders:
        raise SymalignError(f"unknown data spec {spec!r}; known: {SPECS}")
    _cache[spec] = loaders[kind]()
    return _cache[spec]


def learned_defaults(spec: str) -> dict:
    """The learned matcher's data-dependent defaults (steps, input noise) for a data spec, read
    without loading the data, so a page or the CLI can show them before anything runs."""
    kind = spec.partition(":")[0]
    return dict(ImageData.LEARNED_DEFAULTS if kind in IMAGE_KINDS else TextData.LEARNED_DEFAULTS)


__all__ = ["IMAGE_KINDS", "ImageData", "SPECS", "TextData", "learned_defaults", "load_data"]
