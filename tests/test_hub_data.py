"""Data sets by hub id (issue #42 item 6): `hf:NAME[:CONFIG][@SPLIT]` read from an offline hub cache
that the test lays out as the hub would (parquet files in a dataset repo snapshot). Text is the
named split's rows, with the data set's own train split for training; images come with their
labels and score a zoo ViT as its own digits do; absent names, configs, splits and columns are one line."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from symalign.cli import main
from symalign.data import load_data
from symalign.data.text import encode, model_tokenizer
from symalign.errors import SymalignError
from symalign.landscape.evaluate import evaluate
from symalign.models import load_model

ORG = "symalign-test"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def put_dataset(root, repo: str, splits: dict, features=None) -> None:
    """A dataset repo snapshot in the hub cache at `root`: data/SPLIT-00000-of-00001.parquet per split."""
    from datasets import Dataset

    folder = root / f"datasets--{repo.replace('/', '--')}"
    data = folder / "snapshots" / REVISION / "data"
    data.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(REVISION)
    for split, columns in splits.items():
        Dataset.from_dict(columns, features=features).to_parquet(str(data / f"{split}-00000-of-00001.parquet"))


def digit_images(x: torch.Tensor) -> list[dict]:
    """The digits' 8×8 images as PNG bytes (0..16 → 0..255), as an image column stores them."""
    from PIL import Image

    out = []
    for image in x[:, 0]:
        pixels = np.round((image.numpy() + 1) / 2 * 255).clip(0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels, mode="L").save(buffer, format="PNG")
        out.append({"bytes": buffer.getvalue(), "path": None})
    return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    from datasets import ClassLabel, Features, Image

    root = tmp_path_factory.mktemp("hf") / "hub"
    plays = load_data("shakespeare").text
    lines = plays[:300_000].split("\n")
    put_dataset(root, f"{ORG}/plays", {"train": {"text": lines[:-2000]}, "validation": {"text": lines[-2000:]}})
    digits = load_data("digits")
    features = Features({"image": Image(), "label": ClassLabel(names=[str(i) for i in range(10)])})
    put_dataset(root, f"{ORG}/digits", {"train": {"image": digit_images(digits.train_x),
                                                   "label": digits.train_y.tolist()},
                                         "test": {"image": digit_images(digits.eval_x),
                                                  "label": digits.eval_y.tolist()}}, features)
    put_dataset(root, f"{ORG}/numbers", {"train": {"a": [1, 2, 3], "b": [4, 5, 6]}})
    return root, lines


@pytest.fixture
def offline(cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(cache[0]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_text_by_hub_id_is_the_named_split_with_its_own_train_split(offline, capsys):
    _, lines = offline
    model = load_model("zoo:gpt-shakespeare/0")
    data = load_data(f"hf:{ORG}/plays@validation")
    data.check_model(model)
    tokenizer = model_tokenizer(model.source)
    assert torch.equal(data.tokens(model, "eval"), encode(tokenizer, "\n".join(lines[-2000:])))
    assert torch.equal(data.tokens(model, "train"), encode(tokenizer, "\n".join(lines[:-2000])))
    assert main(["barrier", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--data", f"hf:{ORG}/plays",
                 "--points", "3", "--max-examples", "16", "--json", "--no-record"]) == 0
    curve = json.loads(capsys.readouterr().out)
    assert curve["barrier"] > 0.1 and curve["data"] == f"hf:{ORG}/plays"  # validation by default


def test_images_by_hub_id_score_the_zoo_vit_as_its_own_digits(offline):
    model = load_model("zoo:vit-digits/0")
    hub = load_data(f"hf:{ORG}/digits")  # no validation split: test evaluates
    assert hub.num_classes == 10 and len(hub.eval_y) == len(load_data("digits").eval_y)
    assert torch.equal(hub.eval_y, load_data("digits").eval_y)
    mine, theirs = evaluate(model, hub), evaluate(model, load_data("digits"))
    assert mine.loss == pytest.approx(theirs.loss, rel=0.02)  # PNG rounding moves pixels by < 0.4%
    assert mine.accuracy == pytest.approx(theirs.accuracy, abs=0.01)


@pytest.mark.parametrize("spec, words", [
    (f"hf:{ORG}/absent", "no data set of that name in the hub cache"),
    (f"hf:{ORG}/plays@test", "no split 'test'; it has train, validation"),
    (f"hf:{ORG}/plays:nope", "hf:symalign-test/plays:"),
    (f"hf:{ORG}/numbers", "no `text` column to read (columns: a, b)"),
])
def test_absent_names_configs_splits_and_columns_are_one_line(offline, spec, words, tmp_path, capsys):
    with pytest.raises(SymalignError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_data(spec)
    assert main(["barrier", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--data", spec, "--no-record"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and spec.split("@")[0].split(":nope")[0] in err


def test_an_unreachable_hub_is_one_line_at_once(monkeypatch, capfd):
    """Online with no route to the hub, `datasets` retried for 31 s, printing huggingface_hub's warning on each
    retry ("'[Errno -2] ...' thrown while requesting HEAD ..."), before symalign's line. One request to the hub's
    API now fails at once, and `datasets` is not called. No network is assumed either way: the request is stood in."""
    import datasets
    import huggingface_hub

    def no_route(self, name, **kwargs):
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", no_route)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("datasets was asked"))
    assert main(["barrier", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--data", "hf:org/nowhere"]) == 2
    err = capfd.readouterr().err
    assert "hf:org/nowhere: the hub could not be reached ([Errno -2]" in err and "HF_HUB_OFFLINE=1" in err
    assert err.count("\n") == 1, err


def test_the_hub_library_s_warnings_during_a_load_stay_off_the_terminal(monkeypatch, capsys):
    """A load that fails after the hub answered (here: stood in) may log huggingface_hub warnings, which its own
    handler prints to the terminal; the user sees symalign's one line, and the library's level is put back after.
    (The records are caught at the library's logger: its handler's stream is whatever stderr was at its import.)"""
    import logging

    import datasets
    import huggingface_hub

    def flaky(*args, **kwargs):
        logging.getLogger("huggingface_hub.utils._http").warning("'timed out' thrown while requesting GET https://x")
        raise ConnectionError("Couldn't reach 'org/flaky' on the Hub (LocalEntryNotFoundError)")

    class Kept(logging.Handler):
        def __init__(self):
            super().__init__()
            self.records = []

        def emit(self, record):
            self.records.append(record)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", lambda self, name, **kwargs: None)
    monkeypatch.setattr(datasets, "load_dataset", flaky)
    hub_log, kept = logging.getLogger("huggingface_hub"), Kept()
    level = hub_log.level
    hub_log.setLevel(logging.WARNING)  # its default; another test's model load may have quieted it
    hub_log.addHandler(kept)
    try:
        assert main(["barrier", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--data", "hf:org/flaky"]) == 2
        assert "hf:org/flaky: could not load it (Couldn't reach" in capsys.readouterr().err
        assert kept.records == [] and hub_log.level == logging.WARNING
    finally:
        hub_log.removeHandler(kept)
        hub_log.setLevel(level)
