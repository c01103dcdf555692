"""Small checkpoints are loaded once a process (symalign/models/loaded.py): a second load reads no file
through transformers, hands out its own copy, and a checkpoint rewritten in place is read again."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from symalign.models import io, load_model
from symalign.models.loaded import LOADED, LoadedModels
from symalign.zoo import resolve_zoo


@pytest.fixture
def checkpoint(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(resolve_zoo("zoo:vit-digits/0"), folder)
    return folder


@pytest.fixture
def counted_loads(monkeypatch):
    calls = []
    real = io.load_as

    def counting(path, family, config=None):
        calls.append(path)
        return real(path, family, config)

    monkeypatch.setattr(io, "load_as", counting)
    return calls


def test_a_second_load_reads_nothing_and_is_the_same_model_in_its_own_tensors(checkpoint, counted_loads):
    first = load_model(checkpoint)
    second = load_model(checkpoint)
    assert len(counted_loads) == 1
    assert first.tensors.keys() == second.tensors.keys()
    for name, t in first.tensors.items():
        assert torch.equal(t, second.tensors[name])
        assert t.data_ptr() != second.tensors[name].data_ptr()
    assert second.config is not first.config and second.config.to_dict() == first.config.to_dict()
    assert second.source == first.source and second.dtype == first.dtype


def test_what_a_caller_changes_does_not_reach_the_next_load(checkpoint, counted_loads):
    first = load_model(checkpoint)
    name = next(iter(first.tensors))
    expected = first.tensors[name].clone()
    first.tensors[name].add_(1.0)
    first.tensors.clear()
    first.config.num_hidden_layers = 99
    again = load_model(checkpoint)
    assert torch.equal(again.tensors[name], expected)
    assert again.config.num_hidden_layers != 99
    assert len(counted_loads) == 1


def test_a_checkpoint_rewritten_in_place_is_read_again(checkpoint, counted_loads):
    before = load_model(checkpoint)
    weights = checkpoint / "model.safetensors"
    state = load_file(weights)
    name = next(k for k, v in state.items() if v.is_floating_point())
    state[name] = state[name] + 1.0
    save_file(state, weights, metadata={"format": "pt"})
    after = load_model(checkpoint)
    assert len(counted_loads) == 2
    assert any(not torch.equal(before.tensors[k], after.tensors[k]) for k in before.tensors)


def test_a_broken_checkpoint_is_refused_even_after_it_loaded(checkpoint):
    load_model(checkpoint)
    (checkpoint / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(io.ModelLoadError, match="corrupt"):
        load_model(checkpoint)


def test_the_least_recently_used_models_go_first_when_the_budget_is_spent(checkpoint, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(resolve_zoo("zoo:vit-digits/1"), other)
    a = load_model(checkpoint)
    size = sum(t.numel() * t.element_size() for t in a.tensors.values())
    kept = LoadedModels(max_total_bytes=size)  # room for one
    kept.get(checkpoint, lambda: load_model(checkpoint))
    kept.get(other, lambda: load_model(other))
    assert len(kept) == 1
    loads = []
    kept.get(checkpoint, lambda: loads.append(1) or load_model(checkpoint))
    assert loads == [1]  # evicted, so loaded again
    assert len(LOADED) >= 1


def test_the_weight_files_count_every_floating_value_float8_included(tmp_path):
    """The count decides whether a load sets the real-checkpoint memory policy (symalign.memory): a float8
    checkpoint's values count, an integer buffer's do not."""
    save_file({"w": torch.zeros(3, 4), "h": torch.zeros(5, dtype=torch.bfloat16),
               "f8": torch.zeros(2, 7).to(torch.float8_e4m3fn), "ids": torch.arange(6)}, tmp_path / "model.safetensors")
    stored, other, values = io._check_weight_files(tmp_path)
    assert (stored, other, values) == (torch.float32, {"ids": "I64"}, 12 + 5 + 14)
