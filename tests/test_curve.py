"""Curved paths and loss planes (issue #57): the curve's ends are the models, the fitted bend lowers
the path's loss where the straight line has a barrier, the plane reproduces its own points, and
the CLI writes loadable checkpoints and refuses bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from job_support import wait_for_job

from symalign.cli import main
from symalign.data import load_data
from symalign.errors import SymalignError
from symalign.landscape.curve import BENDS, CurveOptions, curve_loss, fit_bend, midpoint, model_at, point_on
from symalign.landscape.evaluate import evaluate
from symalign.landscape.plane import filter_normalised_direction, three_point_plane
from symalign.models import canonicalize, is_canonical, load_model, outputs, random_inputs, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.runs import RunStore
from symalign.symmetry.random import random_transform

EXAMPLES = 200


@pytest.fixture(scope="module")
def digits():
    return load_data("digits")


@pytest.fixture(scope="module")
def planted(digits):
    """vit-digits/0 and a copy of it under random MLP and head permutations and a residual rotation:
    the same function, with a large barrier on the straight line between them (the planted pair of the issue)."""
    a = canonicalize(load_model("zoo:vit-digits/0"))
    b = transformed(a, random_transform(spec_of(a), {"mlp": "perm", "heads": "perm", "residual": "orthogonal"}, seed=5))
    return a, b


@pytest.mark.parametrize("bend", BENDS)
def test_the_curve_is_exactly_a_and_b_at_its_ends(bend):
    a = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=1))
    b = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=2))
    control = {k: torch.randn_like(v) for k, v in a.tensors.items()}
    for t, end in ((0.0, a), (1.0, b)):
        at = model_at(bend, a, control, b, t)
        assert all(torch.equal(at.tensors[k], end.tensors[k]) for k in a.tensors)
    if bend == "polychain":  # the middle node is on the chain
        assert all(torch.equal(point_on(bend, a.tensors, control, b.tensors, 0.5)[k], control[k]) for k in control)
    else:  # the midpoint bend makes the Bézier curve the straight line
        mid = midpoint(a.tensors, b.tensors)
        line = {k: 0.7 * a.tensors[k] + 0.3 * b.tensors[k] for k in a.tensors}
        on = point_on(bend, a.tensors, mid, b.tensors, 0.3)
        assert max((on[k] - line[k]).abs().max().item() for k in line) < 1e-6


def test_the_fitted_bend_moves_and_lowers_the_path_loss_on_a_planted_pair(planted, digits):
    a, b = planted
    assert all(torch.allclose(outputs(a, x), outputs(b, x), atol=1e-4) for x in [random_inputs(a, n=2)])
    start = midpoint(a.tensors, b.tensors)
    straight = curve_loss("bezier", a, start, b, digits, points=9, max_examples=EXAMPLES)
    assert straight.barrier > 1.0, "the planted pair must have a barrier on the straight line"
    fit = fit_bend(a, b, digits, CurveOptions(steps=100, seed=0))
    moved = sum(float((fit.control[k] - start[k]).norm()) ** 2 for k in start) ** 0.5
    assert moved > 0.05 * sum(float(t.norm()) ** 2 for t in start.values()) ** 0.5
    curved = curve_loss("bezier", a, fit.control, b, digits, points=9, max_examples=EXAMPLES)
    mean = lambda c: sum(c.loss) / len(c.loss)  # noqa: E731
    assert mean(curved) < 0.7 * mean(straight) and curved.barrier < 0.5 * straight.barrier
    assert curved.loss[0] == straight.loss[0] and curved.loss[-1] == straight.loss[-1]  # the same ends
    bend = a.with_tensors(fit.control)
    assert is_canonical(bend)  # projected: the curve lies in the plane of canonical A, B and its bend
    # every point keeps its function under that projection: the measured curve is the trained one
    assert len(fit.history) == 100 and all(0.0 <= h["t"] <= 1.0 for h in fit.history)


def test_the_plane_reproduces_its_three_points_losses(planted, digits):
    a, b = planted
    c = canonicalize(load_model("zoo:vit-digits/1"))
    plane, basis = three_point_plane(a, b, c, digits, resolution=3, margin=0.2, max_examples=EXAMPLES)
    for name, model in zip(("A", "B", "C"), (a, b, c)):
        own = evaluate(model, digits, EXAMPLES)
        assert plane.points[name]["loss"] == pytest.approx(own.loss, abs=1e-6), name
        assert plane.points[name]["accuracy"] == pytest.approx(own.accuracy, abs=1e-9), name
    xs = [p["x"] for p in plane.points.values()]
    assert plane.xs[0] < min(xs) and plane.xs[-1] > max(xs)  # the grid reaches past the triangle
    assert abs(plane.points["B"]["y"]) < 1e-9 and plane.points["C"]["y"] > 0  # u along B − A, v towards C
    u, v = basis.u, basis.v
    assert abs(sum(float((u[k] * v[k]).sum()) for k in u)) < 1e-9  # an orthonormal basis
    assert len(plane.loss) == 3 and len(plane.loss[0]) == 3


def test_collinear_points_are_refused(planted, digits):
    a, b = planted
    mid = a.with_tensors(midpoint(a.tensors, b.tensors))
    with pytest.raises(SymalignError, match="line through A and B"):
        three_point_plane(a, b, mid, digits, resolution=2, max_examples=16)


def test_li_et_al_directions_are_filter_normalised():
    model = random_model(tiny_config("gpt2", tied=False), seed=3)
    d = filter_normalised_direction(model, torch.Generator().manual_seed(0))
    for k, t in model.tensors.items():
        if t.dim() < 2:
            assert not d[k].any(), k
        else:
            own = t.double().reshape(t.shape[0], -1).norm(dim=1)
            assert torch.allclose(d[k].reshape(t.shape[0], -1).norm(dim=1), own, rtol=1e-9), k


@pytest.mark.slow
def test_the_cli_fits_records_and_writes_loadable_checkpoints(tmp_path, capsys, monkeypatch):
    from transformers import AutoModelForImageClassification

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "curve"
    assert main(["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "weight", "--classes", "all",
                 "--steps", "30", "--points", "5", "--max-examples", "64", "--out", str(out), "--export-at", "0.5",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("barrier", "accuracy_barrier", "line_barrier", "aligned_line_barrier", "fit_seconds", "run"):
        assert key in report, key
    assert report["aligned_line_barrier"] < report["line_barrier"]
    (run,) = RunStore(tmp_path / "home" / "runs.sqlite").list(kind="curve")
    assert run.metrics["barrier"] == pytest.approx(report["barrier"]) and run.method == "weight"
    x = torch.rand(2, 1, 8, 8)
    for name in ("bend", "t-0.50", "a"):  # plain transformers loads every checkpoint the curve wrote
        module = AutoModelForImageClassification.from_pretrained(out / name)
        assert torch.isfinite(module(pixel_values=x).logits).all()
    midpoint_model = load_model(out / "t-0.50")
    assert abs(evaluate(midpoint_model, load_data("digits"), 64).loss - report["curve"]["loss"][2]) < 1e-5
    assert main(["plane", str(out / "a"), str(out / "b"), str(out / "bend"), "--curve", str(out),
                 "--resolution", "3", "--max-examples", "32", "--json"]) == 0
    plane = json.loads(capsys.readouterr().out)
    assert plane["curve_off_plane"] < 1e-4  # the curve lies in the plane of its ends and bend
    assert any("curve" in name for name in plane["paths"])


@pytest.mark.parametrize("argv, message", [
    (["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", "--export-at", "1.5"], "--export-at"),
    (["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", "--steps", "-1"], "--steps"),
    (["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "no-such-thing"], "neither a method"),
    (["curve", "zoo:vit-digits/0", "zoo:gpt-shakespeare/0"], "architecture|family|differ"),
    (["plane", "zoo:vit-digits/0", "zoo:vit-digits/1"], "three models"),
    (["plane", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--random"], "one model"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    assert main([*argv, "--no-record"] if argv[0] == "curve" else argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    import re

    assert re.search(message, err), err


@pytest.mark.slow
def test_the_page_shows_the_pair_and_the_plane_and_fits_are_reused(tmp_path, monkeypatch):
    """Beyond the straight line: the pair's two fits (as its job records them, reused when asked again),
    the four paths on one chart with their barriers, and the plane with the paths drawn on it."""
    from streamlit.testing.v1 import AppTest

    from symalign.jobs.kinds import curve_job
    from symalign.match.config import AlignConfig

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    store = RunStore()
    request = {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1",
               "config": AlignConfig(method="weight", preset="all").to_json(), "options": {"steps": 10},
               "points": 5, "max_examples": 64}
    first = curve_job(request, store, lambda *a: None)
    assert len(first) == 2 and curve_job(request, store, lambda *a: None) == first  # the second ask is answered
    assert [store.get(i).method for i in first] == ["none", "weight"]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app_pages" / "paths.py"),
                           default_timeout=180).run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert list(table["path"]) == ["straight line", "aligned straight line (weight)", "bezier curve",
                                   "bezier curve after alignment"]
    metrics = [store.get(i).metrics for i in first]
    assert table["loss barrier"].tolist() == pytest.approx([metrics[0]["line_barrier"],
                                                            metrics[1]["aligned_line_barrier"],
                                                            metrics[0]["barrier"], metrics[1]["barrier"]])
    charts = len(at.get("plotly_chart"))
    at.slider(key="paths-resolution").set_value(5)
    at.button(key="paths-plane").click().run()  # issue #70: the plane is a background job, not a page spinner
    assert not at.exception, [e.value for e in at.exception]
    job = wait_for_job(tmp_path / "home", at.session_state["paths-plane-result-job"])
    assert job.state == "done", job.error
    (plane,) = store.list(kind="plane")
    assert plane.settings["resolution"] == 5 and len(plane.metrics["loss"]) == 5  # recorded: a reload redraws it
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("plotly_chart")) == charts + 1
    at.button(key="paths-plane").click().run()  # asked again: drawn from the history, no second job
    assert len(store.list(kind="plane")) == 1


def test_the_curves_table_and_its_verdict_come_from_the_numbers():
    """`sweep --preset curves`' summary (share of the line left per path) and the report's claim about
    Garipov et al., decided per pair: one pair above 10% turns "agrees" into "agrees in part", named."""
    import pandas as pd

    from research.docgen.curves_section import curve_claim
    from symalign.sweeps.curves import curves_summary, curves_text

    cells = pd.DataFrame({"a": ["zoo:f/0", "zoo:f/0"], "b": ["zoo:f/1", "zoo:f/2"], "line_barrier": [2.0, 1.0],
                          "line_accuracy_barrier": [50.0, 40.0], "aligned_line_barrier": [1.0, 0.4],
                          "aligned_line_accuracy_barrier": [20.0, 10.0], "barrier": [0.1, 0.05],
                          "accuracy_barrier": [2.0, 1.0], "aligned_curve_barrier": [0.0, 0.01],
                          "aligned_curve_accuracy_barrier": [0.0, 0.5], "fit_seconds": [10.0, 12.0],
                          "aligned_fit_seconds": [11.0, 9.0], "runs": ["x y", "z w"]})
    summary = curves_summary(cells).set_index("path")
    assert summary.loc["curve", "barrier_mean"] == pytest.approx(0.075)
    assert summary.loc["aligned straight line", "share_of_line"] == pytest.approx((0.5 + 0.4) / 2)
    assert summary.loc["straight line", "barrier_std"] == pytest.approx(cells["line_barrier"].std())
    text = curves_text(curves_summary(cells), cells, markdown=True)
    assert "zoo:f/0 ↔ zoo:f/2: line 1.000, aligned line 0.400, curve 0.050" in text
    assert curve_claim("f", cells).startswith("**Agrees** with Garipov")
    cells.loc[1, "barrier"] = 0.2  # 20% of that pair's line
    claim = curve_claim("f", cells)
    assert claim.startswith("**Agrees in part**") and "zoo:f/0 ↔ zoo:f/2 (20%)" in claim
