"""Varied small configs of every family, for the tests that run over all of them: what each family can vary
(layers, heads, widths, ties, activations, biases, grouped queries, experts, rotary fractions, ...), drawn at
random from the choices below and built by the family's own `tiny` (its data file's [tiny] table)."""

from __future__ import annotations

import random

from symalign.models.io import FAMILIES

ROPE = {"heads": [2, 4], "per_head": [4, 8]}  # RoPE needs even head sizes
GROUPED = {**ROPE, "kv_heads": lambda o: [h for h in (1, 2, 4) if h <= o["heads"]]}
MOE = {**GROUPED, "layers": [1, 2], "mlp": [8, 12], "tied": [True, False, False], "experts": [2, 3, 4],
       "top_k": [1, 2]}
POST_LN = {"activation": ["gelu", "relu"]}
# Per family name: the choices beyond COMMON (a callable gets the options drawn so far).
CHOICES: dict[str, dict] = {
    "gpt2": {"activation": ["gelu", "relu", "gelu_new"], "qkv_bias": [True, False]},
    "vit": {"activation": ["gelu", "relu"], "qkv_bias": [True, True, False]},
    "clip": {"activation": ["quick_gelu", "relu"]},
    "clip_vision": {"activation": ["quick_gelu", "relu"]},
    "clip_text": {"activation": ["quick_gelu", "gelu", "relu"]},
    "llama": {**GROUPED, "attention_bias": [True, False, False], "mlp_bias": [True, False, False, False]},
    "qwen3": {**GROUPED, "layers": [1, 2], "mlp": [16, 24], "attention_bias": [True, False, False],
              "head_dim": lambda o: [o["width"] // o["heads"], 6, 12]},
    "gemma2": {**GROUPED, "mlp": [16, 24], "head_dim": lambda o: [o["width"] // o["heads"], 6, 12], "window": [4, 8]},
    "phi3": {**GROUPED, "layers": [1, 2], "mlp": [16, 24], "tied": [True, False, False], "rotary": [0.5, 1.0]},
    "mixtral": MOE,
    "olmoe": MOE,
    "qwen2_moe": {**MOE, "shared": [6, 16]},
    "gpt_neox": {"per_head": [8, 16], "activation": ["gelu", "relu"], "tied": [True, False, False],
                 "rotary": [0.25, 0.5, 1.0], "parallel": [True, True, False], "qkv_bias": [True, True, False]},
    "opt": {"layers": [1, 2], "mlp": [16, 24], "activation": ["relu", "gelu"],
            "embed_dim": lambda o: [0, max(2, o["width"] // 2)]},
    "bert": POST_LN, "roberta": POST_LN, "distilbert": {**POST_LN, "mlp": [16, 24]},
}
COMMON = {"layers": [1, 2, 3], "heads": [1, 2, 4], "per_head": [4, 8], "mlp": [16, 24, 48], "tied": [True, False]}


def draw(name: str, rng: random.Random) -> dict:
    """One draw of the keywords `tiny` takes for the family called `name` (a classifier: its base's, and labels)."""
    base, _, variant = name.partition("-")
    choices = {**COMMON, **CHOICES.get(base, {}), **({"labels": [2, 3, 5]} if variant == "classifier" else {})}
    options: dict = {}
    for key, values in choices.items():
        options[key] = rng.choice(values(options) if callable(values) else values)
        if key == "per_head":
            options["width"] = options["heads"] * options.pop("per_head")
    return options


def random_configs(family: str, n: int, seed: int) -> list:
    """n varied small configs of the family with registry key `family`."""
    rng, chosen = random.Random(seed), FAMILIES[family]
    return [chosen.tiny(**draw(chosen.name, rng)) for _ in range(n)]
