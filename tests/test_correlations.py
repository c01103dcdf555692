"""Matched-feature correlations and head blocks (issue #44 item 2), on real computation: a planted
pair's aligned features are A's own (correlation 1), activation matching can only raise the MLP's
matched correlation (the identity is one of the assignments it maximises over), and after
matching the head-output map is brighter inside the head blocks than across them."""

from __future__ import annotations

import json

import pytest

from symalign.cli import main
from symalign.data import load_data
from symalign.match.activation.correlations import feature_correlations
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import canonicalize, load_model, spec_of, transformed
from symalign.symmetry.random import random_transform


@pytest.fixture(scope="module")
def vit_pair():
    a, b = canonicalize(load_model("zoo:vit-digits/0")), canonicalize(load_model("zoo:vit-digits/1"))
    aligned = align(a, b, AlignConfig(method="activation", preset="permutations", data="digits")).aligned
    return a, b, feature_correlations(a, b, aligned, load_data("digits"), max_examples=128)


def test_a_planted_pair_aligned_has_its_features_back():
    a = canonicalize(load_model("zoo:vit-digits/0"))
    b = transformed(a, random_transform(spec_of(a), CLASS_PRESETS["permutations"], seed=4))
    aligned = align(a, b, AlignConfig(method="weight", preset="permutations")).aligned
    report = feature_correlations(a, b, aligned, load_data("digits"), max_examples=64)
    for r in report.layers:  # 1 but for units that never fire on the data (no correlation to have)
        assert r.after > 0.995 and r.after > r.before, r
    assert min(r.before for r in report.layers if r.kind == "mlp") < 0.5  # permuted units do not line up
    for h in report.heads:
        assert h.within_after > 1.5 * h.across_after


def test_activation_matching_raises_every_mlp_correlation(vit_pair):
    _, _, report = vit_pair
    mlp = [r for r in report.layers if r.kind == "mlp"]
    assert mlp and all(r.after > r.before + 0.05 for r in mlp), mlp


def test_after_matching_the_head_map_shows_head_blocks(vit_pair):
    _, _, report = vit_pair
    for h in report.heads:  # measured: within/across 1.13-1.34 after, 0.82-1.14 before (2 of 4 blocks below 1)
        assert h.within_after > h.across_after, h.to_json()
        assert h.within_after / h.across_after > h.within_before / h.across_before, h.to_json()
        assert h.before.shape == (h.heads * h.d_head,) * 2


def test_the_command_writes_json_and_a_figure(tmp_path, capsys):
    html = tmp_path / "corr.html"
    assert main(["correlations", "zoo:vit-digits/0", "zoo:vit-digits/1", "--classes", "permutations",
                 "--examples", "64", "--layer", "-1", "--html", str(html), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["kind"] for r in out["layers"]} == {"mlp", "heads", "residual"}
    last = next(h for h in out["heads"] if h["layer"] == out["heatmap_layer"])
    assert len(last["after"]) == last["heads"] * last["d_head"]
    assert "head-output features" in html.read_text()
    assert main(["correlations", "zoo:vit-digits/0", "zoo:vit-digits/1", "--layer", "9", "--json"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
