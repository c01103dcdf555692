"""Data specs: fixed splits, clear errors for bad specs and for data that does not fit a model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from symalign.data import load_data
from symalign.data.text import TextData, shakespeare_text
from symalign.errors import SymalignError
from symalign.models.family import TransformerModel
from symalign.models.io import FAMILIES
from symalign.models.tiny import random_model, tiny_config


def test_digits_split_is_fixed_and_disjoint():
    d = load_data("digits")
    assert len(d.train_y) + len(d.eval_y) == 1797 and len(d.eval_y) == 360
    train = {tuple(x.flatten().tolist()) for x in d.train_x}
    overlap = sum(tuple(x.flatten().tolist()) in train for x in d.eval_x)
    assert overlap < 10  # a few digits images are exact duplicates in the source data
    from symalign.data.images import digits

    again = digits()
    assert torch.equal(again.eval_x, d.eval_x) and torch.equal(again.eval_y, d.eval_y)


def test_digits_are_scikit_learns_own_without_importing_it():
    """The digits file read directly gives exactly what `sklearn.datasets.load_digits` gives."""
    from sklearn.datasets import load_digits

    from symalign.data.images import digits_arrays

    images, target = digits_arrays()
    bunch = load_digits()
    assert images.shape == (1797, 8, 8) and np.array_equal(images, bunch.images)
    assert np.array_equal(target, bunch.target) and target.dtype == bunch.target.dtype


def test_shakespeare_text_is_plain_and_split():
    text = shakespeare_text()
    assert len(text) > 4_000_000 and "**" not in text and "HAMLET:" in text
    data = TextData("shakespeare", text)
    assert 0.9 * len(text) < data.split < len(text)


def test_a_character_table_encodes_as_the_tokenizer_does_unknown_characters_included(monkeypatch):
    """`encode`'s lookup table (indexed by code point) gives the tokenizer's own ids, <unk> for characters
    the vocabulary lacks (here Greek and an emoji past the first 65,536 code points); the tokenizer itself
    only checks a sample (the table is what encoded the text, not the fallback)."""
    from symalign.data.text import char_tokenizer, encode

    tokenizer = char_tokenizer("abc ABC\n")
    text = "a b\nc αβ😀 CBA\n" * 3000
    expected = tokenizer(text, add_special_tokens=False)["input_ids"]
    asked, real = [], type(tokenizer).__call__
    monkeypatch.setattr(type(tokenizer), "__call__", lambda self, t, **kw: asked.append(len(t)) or real(self, t, **kw))
    assert encode(tokenizer, text).tolist() == expected and tokenizer.unk_token_id in expected
    assert asked and max(asked) < len(text)
    assert encode(tokenizer, "").tolist() == []


@pytest.mark.parametrize("spec, message", [
    ("foo", "unknown data spec"),
    ("cifar10:/nonexistent", "cifar-10-batches-py"),
    ("cifar100:/nonexistent", "cifar-100-python"),
    ("imagefolder:/nonexistent", "no such folder"),
    ("text:/nonexistent.txt", "no such file"),
    ("cifar10", "needs a path"),
    ("digits:/x", "takes no path"),
])
def test_bad_specs_are_refused_clearly(spec, message):
    with pytest.raises(SymalignError, match=message):
        load_data(spec)


@pytest.mark.parametrize("kind", ["text", "csv", "tsv", "jsonl"])
def test_a_folder_where_a_file_belongs_is_named_a_folder(tmp_path, kind):
    """`text:/etc` said "no such file" of a folder that exists: the user looked for a typo that was not there."""
    with pytest.raises(SymalignError, match=f"{kind}:{tmp_path}: is a folder; this spec reads one file"):
        load_data(f"{kind}:{tmp_path}")


def test_corrupt_cifar_folder_is_refused(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "data_batch_1").write_bytes(b"garbage")
    with pytest.raises(SymalignError, match="incomplete or corrupt"):
        load_data(f"cifar10:{tmp_path}")


def test_imagefolder_loads_and_splits(tmp_path):
    from PIL import Image

    for cls in ("cats", "dogs"):
        (tmp_path / cls).mkdir()
        for i in range(10):
            Image.new("RGB", (12, 9), (i * 20, 0, 0) if cls == "cats" else (0, i * 20,
                                                                            0)).save(tmp_path / cls / f"{i}.png")
    data = load_data(f"imagefolder:{tmp_path}")
    assert data.num_classes == 2 and len(data.eval_y) == 2 and data.train_x.shape[1:] == (3, 32, 32)


def test_data_that_does_not_fit_the_model_is_refused():
    from symalign.data.base import ImageData

    digits = load_data("digits")
    colour = ImageData("colour", digits.train_x.expand(-1, 3, -1, -1), digits.train_y,
                       digits.eval_x.expand(-1, 3, -1, -1), digits.eval_y, 10)
    with pytest.raises(SymalignError, match="3-channel images and the model expects 2 channels"):
        colour.check_model(random_model(tiny_config("vit", image_size=16, patch=4, channels=2), seed=0))
    with pytest.raises(SymalignError, match="image data but the model is a gpt2"):
        digits.check_model(random_model(tiny_config("gpt2"), seed=0))
    with pytest.raises(SymalignError, match="no tokenizer"):
        load_data("shakespeare").check_model(random_model(tiny_config("gpt2"), seed=0))


def test_vocabulary_mismatch_is_refused(tmp_path):
    from symalign.data.text import char_tokenizer

    char_tokenizer(shakespeare_text()).save_pretrained(str(tmp_path))
    small = TransformerModel(FAMILIES["gpt2"], tiny_config("gpt2", vocab=20), {}, str(tmp_path))
    with pytest.raises(SymalignError, match="does not belong"):
        load_data("shakespeare").check_model(small)
    (tmp_path / "other.txt").write_text("ЖЖЖЖ ЮЮЮЮ " * 400)
    fits = TransformerModel(FAMILIES["gpt2"], tiny_config("gpt2", vocab=100), {}, str(tmp_path))
    with pytest.raises(SymalignError, match="vocabulary"):
        load_data(f"text:{tmp_path / 'other.txt'}").check_model(fits)


def _write_idx(path, array, gz=True):
    """An IDX file as MNIST ships it: magic (0, 0, 0x08 for unsigned bytes, rank), big-endian sizes, bytes."""
    import gzip

    import numpy as np

    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    raw = header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()
    (gzip.open if gz else open)(path, "wb").write(raw)


def test_fashion_mnist_reads_the_four_idx_files_and_names_a_missing_one(tmp_path):
    """fashion-mnist:PATH (issue #69's same-architecture row): the IDX files Debian's dataset-fashion-mnist
    installs, gzipped or not, read to images normalised by the training statistics and their labels."""
    import numpy as np

    from symalign.data import images, load_data

    rng = np.random.default_rng(0)
    train, test = rng.integers(0, 256, (12, 28, 28)), rng.integers(0, 256, (5, 28, 28))
    _write_idx(tmp_path / "train-images-idx3-ubyte.gz", train)
    _write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.arange(12) % 10)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte", test, gz=False)  # an unzipped file is read too
    with pytest.raises(SymalignError, match="t10k-labels-idx1-ubyte"):
        images.fashion_mnist(str(tmp_path))
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.array([3, 1, 4, 1, 5]))
    data = load_data(f"fashion-mnist:{tmp_path}")
    assert tuple(data.train_x.shape) == (12, 1, 28, 28) and tuple(data.eval_x.shape) == (5, 1, 28, 28)
    assert data.train_y.tolist() == [i % 10 for i in range(12)] and data.eval_y.tolist() == [3, 1, 4, 1, 5]
    expected = (test[2, 7, 9] / 255.0 - images.FASHION_MEAN) / images.FASHION_STD
    assert abs(float(data.eval_x[2, 0, 7, 9]) - expected) < 1e-5
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b" + b"not gzip")  # corrupt: one clear line
    with pytest.raises(SymalignError, match="cannot be read as an IDX file"):
        images.fashion_mnist(str(tmp_path))
    with pytest.raises(SymalignError, match="needs a path"):
        load_data("fashion-mnist")
