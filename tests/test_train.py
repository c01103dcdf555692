"""Each CPU recipe trains end to end (a few steps), deterministically for a seed, and the result
loads with plain transformers (text models with their tokenizer)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoModelForImageClassification, AutoTokenizer

from symalign.cli import main
from symalign.errors import SymalignError
from symalign.train.loop import train


@pytest.mark.parametrize("recipe, steps", [("vit-digits", 4), ("gpt-shakespeare", 2)])
@pytest.mark.slow
def test_cpu_recipe_trains_end_to_end(recipe, steps, tmp_path):
    first = train(recipe, 3, tmp_path / "a", steps=steps)
    second = train(recipe, 3, tmp_path / "b", steps=steps)
    other = train(recipe, 4, tmp_path / "c", steps=steps)
    wa, wb, wc = (load_file(tmp_path / d / "model.safetensors") for d in "abc")
    assert all(torch.equal(wa[k], wb[k]) for k in wa), "same seed must give the same weights"
    assert any(not torch.equal(wa[k], wc[k]) for k in wa), "another seed must give other weights"
    assert first["eval_loss"] == second["eval_loss"] and first["eval_loss"] != other["eval_loss"]
    record = json.loads((tmp_path / "a" / "training.json").read_text())
    assert record["steps"] == steps and "--seed 3" in record["command"]
    if recipe == "gpt-shakespeare":
        model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "a"))
        tok = AutoTokenizer.from_pretrained(str(tmp_path / "a"))
        ids = tok("ROMEO:\nWhat light", return_tensors="pt")["input_ids"]
        assert tok.decode(ids[0]) == "ROMEO:\nWhat light"
        assert model(input_ids=ids).logits.shape == (1, ids.shape[1], model.config.vocab_size)
    else:
        model = AutoModelForImageClassification.from_pretrained(str(tmp_path / "a"))
        assert model(pixel_values=torch.zeros(2, 1, 8, 8)).logits.shape == (2, 10)


def test_paper_recipe_without_data_and_unknown_recipe(tmp_path, capsys):
    with pytest.raises(SymalignError, match="needs --data"):
        train("vit-cifar10", 0, tmp_path / "x", steps=1)
    assert main(["train", "nope", "--out", str(tmp_path / "y")]) == 2
    assert "known: vit-digits, gpt-shakespeare" in capsys.readouterr().err


@pytest.mark.parametrize("recipe", ["vit-digits", "gpt-tinyshakespeare"])
def test_learning_rate_schedule_survives_any_step_count(recipe):
    """OneCycleLR divided by zero at 5 steps (found by the app's training test)."""
    import torch

    from symalign.train.loop import _schedule, recipe_named

    for steps in range(1, 41):
        param = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.AdamW([param], lr=1e-3)
        scheduler = _schedule(recipe_named(recipe), optimizer, steps)
        for _ in range(steps):
            optimizer.step()
            scheduler.step()
        assert all(0 <= g["lr"] < 1 for g in optimizer.param_groups)


def test_a_fine_tune_recipe_starts_from_its_base_model(tmp_path):
    from symalign.models import load_model
    from symalign.models.compare import relative_change
    from symalign.train.recipes import RECIPES

    recipe = RECIPES["vit-digits-flipped"]
    record = train("vit-digits-flipped", 0, tmp_path / "ft", steps=3)
    base, tuned = load_model(recipe.init), load_model(tmp_path / "ft")
    assert record["init"] == recipe.init and record["data"] == "digits-flipped"
    assert 0 < relative_change(base, tuned) < 0.05  # a few small steps away from the base, not a fresh model
