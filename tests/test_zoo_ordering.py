"""The ordering the papers report, as the zoo actually shows it (margins from measured values, see the
README table and `research/docgen/zoo_barriers.py`): vanilla > weight matching with residual rotations >
learned ≈ 0. Measured on vit-digits 0↔1: none 3.95, weight-perm 4.91, weight-full 2.34, activation-full
1.45, learned-perm 0.67, learned-full 0.08 (at the default 600 steps; the tests run learned
matching for fewer steps, `VIT_STEPS` and `TEXT_STEPS`, where it already shows the ordering:
measured below). On gpt-shakespeare 0↔1: none 1.27, weight-perm 1.24, weight-full 0.22. Permutations
alone do not lower the barrier at this scale (as the zoo's calibration found (docs/zoo.md)): the residual basis
is what matters. (Activation beats weight matching on 0↔1 and 0↔2 but not on 1↔2, so that test names
its pair.)"""

from __future__ import annotations

import pytest

from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model

pytestmark = pytest.mark.slow  # minutes of learned matching or a real browser: `-m 'not slow'` skips

PERMS = {"mlp": "perm", "heads": "perm"}
# Learned matching's steps here (its default is 600): the orderings already
# hold, with margins, at a third or a fifth of them, and the suite runs in minutes (issue #40).
VIT_STEPS = 100  # measured (one thread, 2026-11-29): learned-perm 0.88, learned-full 0.035, narrow ↔ wide 0.024
# (at 200: 0.73, 0.00, 0.012); the bounds below are 3.9, 0.2 and 0.2
TEXT_STEPS = 30  # measured on 0↔1 (11 points, one thread): llama 0.31, pythia 0.15 (at 60 steps: 0.25, 0.11)
BERT_STEPS = 150  # measured on 0↔1, one thread: 0.90 (11 points); 0.91, 0.89, 0.89 at 150, 300, 600 (21 points)
# The text tests' curves: 11 points on 64 windows. Their barriers equal the 21-point ones to two decimals
# (llama 1.31 / 0.70 / 0.25, pythia 1.02 / 0.41 / 0.11, measured 2026-11-29), at half the evaluations.
TEXT_POINTS = 11
FULL = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}


def barrier(a, b, data, method, classes, max_examples=None, **options):
    if method == "learned":
        options.setdefault("steps", VIT_STEPS)
    aligned = align(a, b, AlignConfig(method=method, classes=classes, data="digits" if method != "weight" else None,
                                      **options)).aligned if method != "none" else b
    return interpolation_curve(a, aligned, data, max_examples=max_examples).barrier


@pytest.fixture(scope="module")
def vit_barriers():
    a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
    data = load_data("digits")
    return {
        "none": barrier(a, b, data, "none", {}),
        "weight-perm": barrier(a, b, data, "weight", PERMS),
        "weight-full": barrier(a, b, data, "weight", FULL),
        "learned-perm": barrier(a, b, data, "learned", PERMS),
        "learned-full": barrier(a, b, data, "learned", FULL),
        "activation-full": barrier(a, b, data, "activation", FULL),
    }


def test_vit_digits_ordering(vit_barriers):
    b = vit_barriers
    assert b["none"] > b["weight-full"] + 1.0
    assert b["weight-perm"] >= b["weight-full"]
    assert b["weight-full"] > b["learned-full"] + 1.0
    assert b["learned-perm"] < b["weight-perm"] - 1.0
    assert b["learned-full"] < 0.2


def test_vit_digits_activation_residual_beats_data_free(vit_barriers):
    """docs/zoo.md: for images, a residual basis from hidden states beats the data-free start."""
    assert vit_barriers["activation-full"] < vit_barriers["weight-full"]


def test_gpt_shakespeare_ordering():
    a, b = load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1")
    data = load_data("shakespeare")
    none = barrier(a, b, data, "none", {}, max_examples=64)
    full = barrier(a, b, data, "weight", FULL, max_examples=64)
    assert none > full + 0.5
    assert full < 0.5


def test_a_narrow_zoo_model_aligns_with_a_wide_one():
    """Width-heterogeneous (README table, research/docgen/zoo_widths.py; narrow 1 ↔ wide 2 measured:
    none 3.26, weight all 0.86, learned all 0.02): the narrow model keeps its loss once embedded,
    and learned matching over all classes removes the barrier the bare embedding leaves."""
    from symalign.landscape.evaluate import evaluate

    narrow, wide = load_model("zoo:vit-digits-narrow/1"), load_model("zoo:vit-digits/2")
    data = load_data("digits")
    none = interpolation_curve(narrow, wide, data, points=11)
    assert none.endpoint_loss[0] == pytest.approx(evaluate(narrow, data).loss, rel=1e-4)
    learned = barrier(narrow, wide, data, "learned", FULL)
    assert none.barrier > learned + 1.5
    assert learned < 0.2


def text_barriers(recipe: str, learned_steps: int = TEXT_STEPS,
                  data_name: str = "shakespeare") -> tuple[float, float, float]:
    """0↔1 barriers of a text zoo recipe on 64 windows: none, weight (all), learned (all)."""
    a, b = load_model(f"zoo:{recipe}/0"), load_model(f"zoo:{recipe}/1")
    data = load_data(data_name)

    def measured(method, **options):
        aligned = align(a, b, AlignConfig(method=method, preset="all", data=data_name, **options)).aligned
        return interpolation_curve(a, aligned, data, max_examples=64, points=TEXT_POINTS).barrier

    return interpolation_curve(a, b, data, max_examples=64, points=TEXT_POINTS).barrier, measured("weight"), \
        measured("learned", steps=learned_steps)


def test_llama_shakespeare_ordering():
    """The Llama zoo (README table; 0↔1 measured: none 1.30, weight all 0.71, learned all 0.20, 0.31 at
    the test's 30 steps):
    under RoPE the preset `all` uses rotary QK maps, and the residual rotation RMSNorm admits
    (no Q·1 = 1 condition) is again what lowers the barrier; learned matching lowers it further."""
    none, weight, learned = text_barriers("llama-shakespeare")
    assert none > weight + 0.4
    assert weight > learned + 0.2
    assert learned < 0.45


def test_pythia_shakespeare_ordering():
    """The GPT-NeoX zoo (README table; 0↔1 as measured here on 64 windows: none 1.02, weight all 0.40,
    learned all at 150 steps 0.07, at the test's 30 steps 0.15): with RoPE on a quarter of each
    head, `all` uses rotary QK maps there and rotations on the rest; the residual rotation
    (LayerNorm: Q·1 = 1) is what lowers the barrier, and learning lowers it further."""
    none, weight, learned = text_barriers("pythia-shakespeare")
    assert none > weight + 0.3
    assert weight > learned + 0.15
    assert learned < 0.3


def test_bert_shakespeare_ordering():
    """The post-LN zoo (README table; 0↔1 measured: none 1.86, weight all 1.58, activation 1.41,
    learned all 0.97): with the residual held to permutations the barrier stays high, and only
    learned matching removes about half of it. Here, on 11 points and `BERT_STEPS` learned steps
    (2026-11-29, one thread): none 1.86, weight 1.48, learned 0.90."""
    none, weight, learned = text_barriers("bert-shakespeare", BERT_STEPS, data_name="shakespeare-mlm")
    assert none > 1.2 and weight > learned + 0.3 and none > learned + 0.6
