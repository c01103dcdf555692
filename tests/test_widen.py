"""Models of different widths: embedding a narrow model in a wide one's basis keeps its function
(also after export and a plain transformers reload), a planted width-heterogeneous pair is
recovered by weight matching, and pairs that cannot be embedded are refused in one line."""

from __future__ import annotations

import json
import random

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageClassification

from symalign.cli import main
from symalign.errors import ArchitectureMismatchError
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import is_canonical, outputs, random_inputs, save_model, spec_of, transformed, widen
from symalign.models.tiny import random_model, tiny_config
from symalign.models.widen import embed, match_widths
from symalign.symmetry.random import random_transform
from tests.conftest import LAYERNORM_FAMILIES

TOL = 1e-4


def pair_configs(family: str, seed: int):
    """A narrow config and a wider one (more heads of the same size, wider MLP), shared otherwise."""
    rng = random.Random(seed)
    head, heads, extra = rng.choice([4, 8]), rng.choice([1, 2, 3]), rng.choice([1, 2])
    shared = dict(layers=rng.choice([1, 2, 3]), activation=rng.choice(["gelu", "relu"]), tied=rng.random() < 0.5,
                  qkv_bias=rng.random() < 0.7)
    mlp = rng.choice([8, 16, 24])
    narrow = tiny_config(family, width=head * heads, heads=heads, mlp=mlp, **shared)
    wide = tiny_config(family, width=head * (heads + extra), heads=heads + extra, mlp=mlp + rng.choice([0, 8, 40]),
                       **shared)
    return narrow, wide


def max_gap(a, b, x) -> float:
    return (outputs(a, x) - outputs(b, x)).abs().max().item()


@pytest.mark.parametrize("family", ["gpt2", "vit"])
@pytest.mark.parametrize("index", range(5))
def test_embedding_keeps_the_function_on_random_configs(family, index, tmp_path):
    narrow_config, wide_config = pair_configs(family, seed=100 * index + 7)
    narrow, wide = random_model(narrow_config, seed=index), random_model(wide_config, seed=index + 50)
    embedded = embed(narrow, wide)
    assert embedded.dims == wide.dims
    assert is_canonical(embedded)
    x = random_inputs(narrow, n=3, seed=index)
    assert max_gap(narrow, embedded, x) < TOL
    folder = save_model(embedded, tmp_path / "embedded")
    auto = AutoModelForCausalLM if family == "gpt2" else AutoModelForImageClassification
    with torch.no_grad():
        reloaded = auto.from_pretrained(str(folder)).eval()(**x).logits
    assert (reloaded - outputs(narrow, x)).abs().max().item() < TOL


@pytest.mark.parametrize("family", LAYERNORM_FAMILIES)
def test_new_units_and_heads_are_empty_and_the_residual_is_a_scaled_injection(family):
    narrow = random_model(tiny_config(family, width=16, heads=2, mlp=24), seed=1)
    wide = random_model(tiny_config(family, width=32, heads=4, mlp=40), seed=2)
    embedded = embed(narrow, wide)
    fc = embedded.tensors["layer.0.mlp.fc.weight"]
    assert fc[24:].abs().max() == 0 and embedded.tensors["layer.0.mlp.fc.bias"][24:].abs().max() == 0
    assert embedded.tensors["layer.0.attn.v.weight"][2:].abs().max() == 0
    assert embedded.tensors["layer.0.attn.o.weight"][:, 2:].abs().max() == 0
    # every residual writer of a canonical model is mean-free, so the embedding is zero-padding × √(N/n)
    proj = embedded.tensors["layer.0.mlp.proj.weight"]
    assert proj[16:].abs().max() < 1e-6
    from symalign.models import canonicalize

    small = canonicalize(narrow).tensors["layer.0.mlp.proj.weight"]
    assert torch.allclose(proj[:16, :24], small * 2 ** 0.5, atol=1e-6)


@pytest.mark.parametrize("family", LAYERNORM_FAMILIES)
def test_zero_padding_without_the_layernorm_correction_changes_the_function(family, monkeypatch):
    """The test above can fail: an embedding that ignores LayerNorm's statistics over the wider
    residual (plain zero-padding, no √(N/n)) is measurably a different function."""
    narrow = random_model(tiny_config(family, width=16, heads=2, mlp=24), seed=1)
    wide = random_model(tiny_config(family, width=32, heads=4, mlp=40), seed=2)
    x = random_inputs(narrow, n=3, seed=0)
    assert max_gap(narrow, embed(narrow, wide), x) < TOL

    def padding_only(small, big):
        maps = original(small, big)
        j = torch.eye(big.dims.d_model, small.dims.d_model, dtype=torch.float64)
        return {**maps, "residual": (j, j)}

    original = widen._maps
    monkeypatch.setattr(widen, "_maps", padding_only)
    assert max_gap(narrow, embed(narrow, wide), x) > 1e-2


@pytest.mark.parametrize("family", ["gpt2", "vit"])
@pytest.mark.parametrize("preset", ["permutations", "all"])
@pytest.mark.parametrize("narrow_first", [True, False])
def test_weight_matching_recovers_a_planted_width_heterogeneous_pair(family, preset, narrow_first):
    """B = the narrow model embedded and then moved by a random element of the wide group
    (partial permutations of units and heads, and for `all` a semi-orthogonal residual map and
    per-head rotations): aligning the narrow model with B recovers B to 1e-4, in either order."""
    narrow = random_model(tiny_config(family, width=24, heads=3, mlp=40), seed=3)
    wide = random_model(tiny_config(family, width=40, heads=5, mlp=96), seed=4)
    embedded = embed(narrow, wide)
    classes = CLASS_PRESETS[preset]
    planted = transformed(embedded, random_transform(spec_of(embedded), classes, seed=5))
    config = AlignConfig(method="weight", classes=classes)
    if narrow_first:  # B (planted, wide) is moved into the embedded narrow model's basis
        result, target = align(narrow, planted, config), embedded
    else:  # the narrow B is embedded and moved into the planted wide model's basis
        result, target = align(planted, narrow, config), planted
    assert result.report.widths["embedded"] == ("a" if narrow_first else "b")
    for name, t in target.tensors.items():
        got = result.aligned.tensors[name].double()
        rel = (got - t.double()).norm() / max(t.double().norm().item(), 1e-12)
        assert rel < TOL, (name, rel)
    assert result.report.function_gap_vs_b < TOL
    # unaligned, the same pair is far apart: the recovery is the matcher's work
    assert sum((planted.tensors[k] - embedded.tensors[k]).norm() for k in embedded.tensors) > 1.0


@pytest.mark.parametrize("family", LAYERNORM_FAMILIES)
def test_pairs_that_do_not_fit_are_refused_in_one_line(family):
    base = random_model(tiny_config(family, width=16, heads=2, mlp=64), seed=1)
    mixed = random_model(tiny_config(family, width=32, heads=4, mlp=32), seed=1)  # wider residual, narrower MLP
    other_heads = random_model(tiny_config(family, width=32, heads=2, mlp=64), seed=1)  # head size 16 vs 8
    deeper = random_model(tiny_config(family, layers=3, width=32, heads=4, mlp=64), seed=1)
    with pytest.raises(ArchitectureMismatchError, match="neither model is at most as wide"):
        match_widths(base, mixed)
    with pytest.raises(ArchitectureMismatchError, match="head size"):
        match_widths(base, other_heads)
    with pytest.raises(ArchitectureMismatchError, match="depth"):
        match_widths(base, deeper)


def test_same_widths_pass_through_unchanged(family):
    a = random_model(tiny_config(family), seed=1)
    b = random_model(tiny_config(family), seed=2)
    a2, b2, note = match_widths(a, b)
    assert a2 is a and b2 is b and note == {}


def test_cli_aligns_and_measures_a_narrow_and_a_wide_model(tmp_path, capsys):
    narrow = random_model(tiny_config("vit", width=24, heads=3, mlp=40), seed=3)
    wide = random_model(tiny_config("vit", width=32, heads=4, mlp=64), seed=4)
    save_model(narrow, tmp_path / "narrow")
    save_model(wide, tmp_path / "wide")
    pair, data = [str(tmp_path / "narrow"), str(tmp_path / "wide")], ["--data", "digits", "--max-examples", "32"]
    assert main(["align", *pair, *data, "--barrier", "--out", str(tmp_path / "aligned"), "--no-record", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["barrier"] == pytest.approx(out["barrier"])  # finite
    saved = json.loads((tmp_path / "aligned" / "alignment.json").read_text())
    assert saved["widths"]["embedded"] == "a" and saved["widths"]["from"]["residual"] == 24
    assert main(["barrier", *pair, *data, "--points", "3", "--no-record", "--json"]) == 0
    vanilla = json.loads(capsys.readouterr().out)
    narrow_loss = vanilla["endpoint_loss"][0]
    from symalign.data import load_data
    from symalign.landscape.evaluate import evaluate

    assert narrow_loss == pytest.approx(evaluate(narrow, load_data("digits"), max_examples=32).loss, rel=1e-4)


def test_cli_refuses_a_pair_that_does_not_fit_in_one_line(tmp_path, capsys):
    save_model(random_model(tiny_config("vit", width=16, heads=2, mlp=64), seed=1), tmp_path / "a")
    save_model(random_model(tiny_config("vit", width=32, heads=4, mlp=32), seed=1), tmp_path / "b")
    code = main(["align", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out"), "--no-record"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "neither model" in err
    assert not (tmp_path / "out").exists()


def test_raw_form_is_refused_for_models_of_different_widths(tmp_path, capsys):
    save_model(random_model(tiny_config("vit", width=16, heads=2, mlp=32), seed=1), tmp_path / "a")
    save_model(random_model(tiny_config("vit", width=32, heads=4, mlp=64), seed=1), tmp_path / "b")
    code = main(["barrier", str(tmp_path / "a"), str(tmp_path / "b"), "--data", "digits", "--form", "raw",
                 "--no-record"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "canonical form" in err
