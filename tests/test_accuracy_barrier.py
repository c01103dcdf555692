"""Accuracy barriers (issue #42): beside every loss barrier, the largest drop of accuracy below the
straight line between the endpoints' accuracies (and below their mean), in percentage points, for
classifiers and language models; in the JSON, the run history, sweeps' cells and summaries."""

from __future__ import annotations

import json

import pytest

from symalign.cli import main
from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig, preset_classes
from symalign.models import canonicalize, load_model, spec_of, transformed
from symalign.runs import RunStore
from symalign.runs.table import runs_table
from symalign.symmetry.random import random_transform


def by_hand(curve) -> tuple[float, float]:
    a, b = curve.accuracy[0], curve.accuracy[-1]
    line = [a + t * (b - a) for t in curve.lambdas]
    return 100 * max(x - y for x, y in zip(line, curve.accuracy)), 100 * ((a + b) / 2 - min(curve.accuracy))


@pytest.mark.parametrize("recipe, data, examples", [("vit-digits", "digits", None),
                                                    ("gpt-shakespeare", "shakespeare", 32),
                                                    ("bert-shakespeare", "shakespeare-mlm", 32),
                                                    ("bert-shakespeare-genre", "shakespeare-genre", 256)])
def test_a_planted_symmetry_costs_accuracy_on_the_straight_path_and_alignment_gives_it_back(recipe, data, examples):
    a = canonicalize(load_model(f"zoo:{recipe}/0"))
    spec = spec_of(a)
    b = transformed(a, random_transform(spec, spec.fit(preset_classes("permutations")), seed=5))
    data = load_data(data)
    vanilla = interpolation_curve(a, b, data, points=7, max_examples=examples)
    assert (vanilla.accuracy_barrier, vanilla.accuracy_barrier_mean) == pytest.approx(by_hand(vanilla), abs=1e-9)
    assert vanilla.accuracy_barrier > 5  # the same function at both ends, much worse in between
    aligned = align(a, b, AlignConfig(method="weight", preset="permutations")).aligned
    recovered = interpolation_curve(a, aligned, data, points=7, max_examples=examples)
    assert abs(recovered.accuracy_barrier) < 0.5 and recovered.accuracy_barrier < vanilla.accuracy_barrier - 5


def test_the_json_the_history_and_a_sweep_carry_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--points", "5", "--max-examples", "64",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy_barrier"] == pytest.approx(by_hand(type("C", (), out))[0], abs=1e-9)
    assert out["accuracy_barrier"] > 1  # two seeds trained apart: accuracy dips in between
    store = RunStore(tmp_path / "home" / "runs.sqlite")
    (run,) = store.list()
    table = runs_table([run])
    assert table["accuracy_barrier"].iloc[0] == pytest.approx(out["accuracy_barrier"])
    del run.metrics["accuracy_barrier"]  # a run recorded before accuracy barriers: read from its curve
    assert runs_table([run])["accuracy_barrier"].iloc[0] == pytest.approx(out["accuracy_barrier"])

    from symalign.sweeps.grid import grid_from_dict
    from symalign.sweeps.sweep import run_sweep

    pairs = [["zoo:vit-digits/0", "zoo:vit-digits/1"], ["zoo:vit-digits/0", "zoo:vit-digits/2"]]
    grid = grid_from_dict({"pairs": pairs, "rows": [{"method": "none"}], "points": 5, "max_examples": 64}, "t.toml")
    result = run_sweep(grid, executor="serial", store=store)
    assert result.cells["accuracy_barrier"].notna().all()
    line = result.summary.iloc[0]
    assert line["n"] == 2 and line["sem"] == pytest.approx(line["std"] / 2 ** 0.5)
    assert line["accuracy_mean"] == pytest.approx(result.cells["accuracy_barrier"].mean())


def test_the_simplex_has_an_accuracy_surface_summary():
    from symalign.landscape.simplex import ACCURACY_EPSILON, simplex_surface

    models = [canonicalize(load_model(f"zoo:vit-digits/{i}")) for i in range(3)]
    surface = simplex_surface(*models, load_data("digits"), resolution=3, max_examples=128)
    corners = [surface.accuracy[surface.weights.index(w)] for w in ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])]
    drops = [100 * (sum(w * c for w, c in zip(ws, corners)) - a) for ws, a in zip(surface.weights, surface.accuracy)]
    assert surface.accuracy_barrier == pytest.approx(max(drops)) and surface.accuracy_barrier > 5  # unaligned seeds
    assert surface.accuracy_near_zero_fraction == pytest.approx(sum(d <= ACCURACY_EPSILON for d in drops) / len(drops))
    assert 3 / len(drops) <= surface.accuracy_near_zero_fraction < 1  # the corners, not the middle
    assert surface.to_json()["accuracy_barrier"] == surface.accuracy_barrier
