"""Shared fixtures: tiny random models of both families (every parameter random)."""

from __future__ import annotations

import random

import pytest
import torch

from symalign.models.tiny import random_model, tiny_config

torch.set_num_threads(2)


def random_configs(family: str, n: int, seed: int) -> list:
    """Varied small configs: layers, heads, widths, tied/untied, GELU/ReLU, with/without q/k/v bias
    (Llama: key/value heads and optional attention/MLP biases; Qwen2: q/k/v biases)."""
    rng = random.Random(seed)
    out = []
    if family in ("llama", "qwen2"):  # grouped queries (1, 2 or all heads per KV head), even head sizes for RoPE
        for _ in range(n):
            heads = rng.choice([2, 4])
            biases = dict(attention_bias=rng.random() < 0.4, mlp_bias=rng.random() < 0.3) if family == "llama" else {}
            out.append(tiny_config(
                family, layers=rng.choice([1, 2, 3]), width=heads * rng.choice([4, 8]), heads=heads,
                kv_heads=rng.choice([h for h in (1, 2, 4) if h <= heads]), mlp=rng.choice([16, 24, 48]),
                tied=rng.random() < 0.5, **biases))
        return out
    if family in ("bert", "roberta"):  # post-LN encoders: tied or untied decoder, GELU or ReLU
        for _ in range(n):
            heads = rng.choice([1, 2, 4])
            out.append(tiny_config(
                family, layers=rng.choice([1, 2, 3]), width=heads * rng.choice([4, 8]), heads=heads,
                mlp=rng.choice([16, 24, 48]), activation=rng.choice(["gelu", "relu"]), tied=rng.random() < 0.5))
        return out
    for _ in range(n):
        heads = rng.choice([1, 2, 4])
        width = heads * rng.choice([4, 8, 12])
        out.append(tiny_config(
            family, layers=rng.choice([1, 2, 3]), width=width, heads=heads, mlp=rng.choice([16, 24, 48]),
            activation=rng.choice(["gelu", "relu", "gelu_new"] if family == "gpt2" else ["gelu", "relu"]),
            tied=rng.random() < 0.5, qkv_bias=rng.random() < 0.7,
        ))
    return out


@pytest.fixture(params=["gpt2", "vit"])
def family(request) -> str:
    return request.param


@pytest.fixture
def model(family):
    return random_model(tiny_config(family, activation="relu", tied=False), seed=7)


@pytest.fixture(autouse=True, scope="session")
def isolated_home(tmp_path_factory):
    """Every test (and every CLI subprocess it starts) records runs in a throw-away data folder."""
    import os

    home = tmp_path_factory.mktemp("symalign-home")
    previous = os.environ.get("SYMALIGN_HOME")
    os.environ["SYMALIGN_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("SYMALIGN_HOME", None)
    else:
        os.environ["SYMALIGN_HOME"] = previous
