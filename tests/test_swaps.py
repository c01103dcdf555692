"""`attribute --swap` (issue #44 item 1): weight matching's transform with one group switched to learned
matching's. The groups cover exactly the spaces where the two differ, switching every group at once is
learned matching's transform (its barrier), and each swap's share is computed from the barriers it says."""

from __future__ import annotations

import json

import pytest

from symalign.cli import main
from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.landscape.swaps import swap_barriers, transform_groups
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import canonicalize, load_model, transformed
from symalign.symmetry.transform import Transform


@pytest.mark.slow
def test_swaps_cover_the_learned_changes_and_add_up_to_the_learned_transform():
    a, b = canonicalize(load_model("zoo:vit-digits/0")), canonicalize(load_model("zoo:vit-digits/1"))
    data = load_data("digits")
    alignment = align(a, b, AlignConfig(method="learned", classes=CLASS_PRESETS["all"], data="digits", steps=10,
                                        patience=10))
    weight, learned = alignment.start, alignment.transform
    groups = transform_groups(weight, learned)
    assert "residual" in groups and any(g.endswith("attention") for g in groups)  # learned rotations moved
    assert not any(g.endswith("MLP") for g in groups)  # beside rotations, permutations stay weight matching's
    everything = Transform({**weight, **{s: learned[s] for spaces in groups.values() for s in spaces}})
    direct = interpolation_curve(a, transformed(b, learned), data, points=5, max_examples=128).barrier
    assert interpolation_curve(a, transformed(b, everything), data, points=5, max_examples=128).barrier == \
        pytest.approx(direct, abs=1e-9)
    base, best, swaps = swap_barriers(a, b, weight, learned, data, points=5, max_examples=128)
    assert best == pytest.approx(direct, abs=1e-9)
    assert [s.barrier for s in swaps] == sorted(s.barrier for s in swaps)
    for s in swaps:
        assert s.closed == pytest.approx((base - s.barrier) / (base - best))


def test_swap_needs_a_learned_method(capsys):
    assert main(["attribute", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "weight", "--swap"]) == 2
    assert "--method learned or soft" in capsys.readouterr().err


@pytest.mark.slow
def test_the_swap_command_prints_json(capsys, tmp_path):
    html = tmp_path / "swaps.html"
    assert main(["attribute", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "learned", "--classes", "all",
                 "--steps", "10", "--swap", "--points", "3", "--eval-examples", "64", "--html", str(html),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"weight_barrier", "learned_barrier", "swaps"} <= set(out) and out["swaps"]
    assert "learned gain" in html.read_text()
