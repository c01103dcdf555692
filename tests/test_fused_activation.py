"""A slow Python-level activation (GPT-2's gelu_new) runs as its fused kernel when symalign evaluates
or learns on a model: same function, faster steps (symalign.models.functional.fused_config)."""

import torch
from transformers.activations import ACT2FN

from symalign.models.functional import logits_of, weightless_module
from symalign.models.tiny import random_model, tiny_config


def test_gelu_new_runs_fused_with_the_same_logits():
    model = random_model(tiny_config("gpt2", layers=2, width=32, activation="gelu_new"), seed=1)
    module = weightless_module(model)
    acts = {type(m).__name__ for m in module.modules() if "GELU" in type(m).__name__}
    assert acts == {type(ACT2FN["gelu_pytorch_tanh"]).__name__}
    assert model.config.activation_function == "gelu_new"  # the model's own config is untouched
    inputs = {"input_ids": torch.randint(0, model.config.vocab_size, (3, 12),
                                         generator=torch.Generator().manual_seed(0))}
    with torch.no_grad():
        reference = model.to_module()(**inputs).logits  # transformers' own gelu_new
    fused = logits_of(model, inputs)
    assert torch.allclose(fused, reference, atol=1e-5, rtol=0)
    assert not torch.equal(fused, torch.zeros_like(fused))


def test_other_activations_keep_their_module():
    model = random_model(tiny_config("gpt2", layers=1, width=16, activation="relu"), seed=0)
    module = weightless_module(model)
    assert any(isinstance(m, type(ACT2FN["relu"])) for m in module.modules())
