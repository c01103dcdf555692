"""Evaluation and training data, named by a spec string: digits, digits-flipped, shakespeare, shakespeare-upper,
shakespeare-mlm (masked characters, for encoders), cifar10:PATH, cifar100:PATH, fashion-mnist:PATH,
imagefolder:PATH, text:PATH, csv:PATH / tsv:PATH / jsonl:PATH (labelled sentences, for sequence classifiers),
hf:NAME[:CONFIG][@SPLIT] (a data set by hub id).

The data classes (and torch) load on first use, so that `learned_defaults` stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from symalign.data.defaults import IMAGE_KINDS, learned_defaults
from symalign.errors import SymalignError

if TYPE_CHECKING:
    from symalign.data.base import ImageData
    from symalign.data.text import TextData

SPECS = ("digits, digits-flipped, shakespeare, shakespeare-upper, shakespeare-mlm, shakespeare-genre, cifar10:PATH, "
         "cifar100:PATH, fashion-mnist:PATH, "
         "imagefolder:PATH, text:PATH, csv:PATH, tsv:PATH, jsonl:PATH, hf:NAME[:CONFIG][@SPLIT]")
_cache: dict[str, ImageData | TextData] = {}


def load_data(spec: str) -> ImageData | TextData:
    """The data source for a spec (cached per process: splits are fixed, so reuse is safe)."""
    if spec in _cache:
        return _cache[spec]
    from symalign.data import images, text
    from symalign.data.text import TextData

    if spec.startswith("hf:"):  # a hub id may hold its own colons (NAME:CONFIG)
        from symalign.data.hub import hub_data

        _cache[spec] = hub_data(spec[3:])
        return _cache[spec]
    kind, _, path = spec.partition(":")
    if kind in ("digits", "digits-flipped", "shakespeare", "shakespeare-upper", "shakespeare-mlm",
                "shakespeare-genre") and path:
        raise SymalignError(f"data spec {spec!r}: {kind} takes no path")
    if kind in ("cifar10", "cifar100", "fashion-mnist", "imagefolder", "text", "csv", "tsv", "jsonl") and not path:
        raise SymalignError(f"data spec {spec!r}: {kind} needs a path, as in {kind}:PATH")
    loaders = {
        "digits": images.digits,
        "digits-flipped": images.digits_flipped,
        "shakespeare": lambda: TextData("shakespeare", text.shakespeare_text()),
        "shakespeare-upper": lambda: TextData("shakespeare-upper", text.shakespeare_text().upper()),
        "shakespeare-mlm": lambda: text.MaskedTextData("shakespeare-mlm", text.shakespeare_text()),
        "shakespeare-genre": lambda: _labelled("shakespeare-genre", ""),
        "cifar10": lambda: images.cifar("cifar10", path),
        "cifar100": lambda: images.cifar("cifar100", path),
        "fashion-mnist": lambda: images.fashion_mnist(path),
        "imagefolder": lambda: images.imagefolder(path),
        "text": lambda: text.text_file(path),
        **{k: (lambda k=k: _labelled(k, path)) for k in ("csv", "tsv", "jsonl")},
    }
    if kind not in loaders:
        raise SymalignError(f"unknown data spec {spec!r}; known: {SPECS}")
    _cache[spec] = loaders[kind]()
    return _cache[spec]


def _labelled(kind: str, path: str):
    from symalign.data.labelled import labelled_file, shakespeare_genre

    return shakespeare_genre() if kind == "shakespeare-genre" else labelled_file(kind, path)


def __getattr__(name: str):
    """ImageData and TextData on first use (PEP 562)."""
    if name == "ImageData":
        from symalign.data.base import ImageData

        return ImageData
    if name == "TextData":
        from symalign.data.text import TextData

        return TextData
    raise AttributeError(f"module 'symalign.data' has no attribute {name!r}")


__all__ = ["IMAGE_KINDS", "ImageData", "SPECS", "TextData", "learned_defaults", "load_data"]
