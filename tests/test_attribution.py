"""Where the barrier lives (issue #44 item 1): `symalign attribute` moves one parameter group at a
time. A pair that differs in one group only puts all of it there; canonical norms (folded to γ = 1,
β = 0) hold none; the groups come ranked, the JSON and figure say the same."""

from __future__ import annotations

import json

import pytest
import torch

from symalign.cli import main
from symalign.data import load_data
from symalign.landscape.attribution import attribute, parameter_groups
from symalign.models import canonicalize, load_model, spec_of, transformed
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import Transform

pytestmark = pytest.mark.slow  # a curve per group and side


def test_a_pair_that_differs_in_one_group_puts_everything_there():
    a = canonicalize(load_model("zoo:vit-digits/0"))
    groups = parameter_groups(a)
    assert set(groups) >= {"embeddings", "head", "block 0 attention", "block 3 MLP", "block 2 norms"}
    assert sorted(n for names in groups.values() for n in names) == sorted(a.tensors)  # each tensor once
    # B: A with block 0's heads permuted, the same function; only that group's tensors differ
    planted = random_transform(spec_of(a), {"heads": "perm"}, seed=3)
    b = transformed(a, Transform({"layer.0.heads": planted["layer.0.heads"]}))
    differ = {n for n in a.tensors if not torch.equal(a.tensors[n], b.tensors[n])}
    assert differ and differ <= set(groups["block 0 attention"])
    whole, ranked = attribute(a, b, load_data("digits"), points=5, max_examples=128)
    assert ranked[0].group == "block 0 attention" and ranked[0].rise_at_a > 0.1  # 0.29 measured
    assert ranked[0].rise_at_a == pytest.approx(ranked[0].rise_at_b, abs=1e-5)  # A and B: the same function
    for g in ranked[1:]:
        assert g.rise_at_a == 0 and g.rise_at_b == 0, g.group  # nothing else differs: a flat path
    assert whole == pytest.approx(ranked[0].rest_at_a, abs=1e-9)  # the whole path is that group's path


def test_the_command_ranks_the_groups_and_writes_json_and_a_figure(tmp_path, capsys):
    html = tmp_path / "where.html"
    assert main(["attribute", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "weight", "--classes", "all",
                 "--points", "3", "--eval-examples", "64", "--html", str(html), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rises = [g["mean_rise"] for g in out["groups"]]
    assert rises == sorted(rises, reverse=True) and rises[0] > 0 and out["barrier"] > 0
    norms = [g for g in out["groups"] if g["group"].endswith("norms")]
    assert norms and all(g["rise_at_a"] == 0 and g["rise_at_b"] == 0 for g in norms)  # canonical: γ = 1, β = 0
    assert html.is_file() and out["groups"][0]["group"] in html.read_text()
    assert main(["attribute", "zoo:vit-digits/0", "zoo:vit-digits/1", "--points", "4"]) == 2
    assert "--points must be odd" in capsys.readouterr().err
    assert torch.isfinite(torch.tensor(rises)).all()
