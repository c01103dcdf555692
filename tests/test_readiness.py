"""What a model can be measured on yet (symalign.models.readiness): an upload saved without a tokenizer or a
record of its data is told what it lacks, takes a tokenizer from a model whose vocabulary fits, records its
data, and is then measurable; a tokenizer too large for it and data of the wrong kind are refused."""

from __future__ import annotations

import pytest
from transformers import GPT2Config, GPT2LMHeadModel

from symalign.errors import SymalignError
from symalign.models import load_model
from symalign.models.readiness import adopt_tokenizer, readiness, record_data
from symalign.zoo import resolve_zoo


def saved_gpt2(folder, vocab: int):
    """Two tiny GPT-2 folders saved as a user would, with `save_pretrained` only: no tokenizer, no data."""
    config = GPT2Config(n_layer=1, n_embd=16, n_head=2, n_positions=32, vocab_size=vocab)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return load_model(folder)


def test_an_upload_without_tokenizer_or_data_says_so_and_is_completed(tmp_path):
    model = saved_gpt2(tmp_path / "mine", vocab=128)
    found = readiness(model)
    assert not found.ready and set(found.missing) == {"tokenizer", "data"}
    assert "weight matching" in found.lines()[0] and "Not yet" in found.lines()[1]
    with pytest.raises(SymalignError, match="no tokenizer"):
        record_data(model, "shakespeare")  # text cannot be checked against it yet
    zoo = load_model(resolve_zoo("zoo:gpt-shakespeare/0"))
    assert "tokenizer.json" in adopt_tokenizer(model, zoo)
    assert set(readiness(model).missing) == {"data"}
    assert readiness(model, "shakespeare").ready  # data named on the page
    with pytest.raises(SymalignError, match="image data"):
        record_data(model, "digits")
    record_data(model, "shakespeare")
    again = readiness(load_model(tmp_path / "mine"))
    assert again.ready and again.data == "shakespeare"


def test_a_tokenizer_larger_than_the_vocabulary_and_wrong_data_are_refused(tmp_path):
    model = saved_gpt2(tmp_path / "small", vocab=8)
    zoo = load_model(resolve_zoo("zoo:gpt-shakespeare/0"))
    with pytest.raises(SymalignError, match="does not belong to this model"):
        adopt_tokenizer(model, zoo)
    assert not (tmp_path / "small" / "tokenizer.json").exists()
    vit = load_model(resolve_zoo("zoo:vit-digits/0"))
    assert readiness(vit).ready  # the zoo records its data
    assert "fit" in readiness(vit, "shakespeare").missing
