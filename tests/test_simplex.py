"""Simplex surfaces on real computation: the grid, corners = each model's own loss, edges = the
pairwise interpolation curves, summaries against the corner plane, and bad input refused."""

from __future__ import annotations

import json

import pytest

from symalign.cli import main
from symalign.data import load_data
from symalign.errors import SymalignError
from symalign.landscape.evaluate import evaluate
from symalign.landscape.interpolation import interpolation_curve
from symalign.landscape.simplex import barycentric_grid, simplex_surface, summarize
from symalign.models import load_model, save_model
from symalign.models.tiny import random_model, tiny_config
from symalign.runs import RunStore

EXAMPLES = 120


@pytest.fixture(scope="module")
def vit_three():
    return [load_model(f"zoo:vit-digits/{i}") for i in range(3)]


@pytest.fixture(scope="module")
def surface(vit_three):
    return simplex_surface(*vit_three, load_data("digits"), resolution=5, max_examples=EXAMPLES)


@pytest.mark.parametrize("r", [1, 2, 5, 10])
def test_grid_has_every_barycentric_point_once(r):
    grid = barycentric_grid(r)
    assert len(grid) == (r + 1) * (r + 2) // 2
    assert all(abs(sum(w) - 1) < 1e-12 and min(w) >= 0 for w in grid)
    assert len({tuple(round(x * r) for x in w) for w in grid}) == len(grid)
    assert [1.0, 0.0, 0.0] in grid and [0.0, 1.0, 0.0] in grid and [0.0, 0.0, 1.0] in grid


def test_corners_are_each_models_own_loss(vit_three, surface):
    data = load_data("digits")
    own = [evaluate(m, data, max_examples=EXAMPLES).loss for m in vit_three]
    assert surface.corner_loss == pytest.approx(own, abs=1e-5)


@pytest.mark.parametrize("pair", [(0, 1), (0, 2), (1, 2)])
def test_every_edge_is_the_pairwise_interpolation_curve(vit_three, surface, pair):
    i, j = pair
    curve = interpolation_curve(vit_three[i], vit_three[j], load_data("digits"), points=surface.resolution + 1,
                                max_examples=EXAMPLES)
    other = ({0, 1, 2} - {i, j}).pop()
    edge = sorted((w[j], loss, acc) for w, loss, acc in zip(surface.weights, surface.loss, surface.accuracy)
                  if w[other] == 0.0)
    assert [lam for lam, _, _ in edge] == pytest.approx(curve.lambdas, abs=1e-12)
    assert [loss for _, loss, _ in edge] == pytest.approx(curve.loss, abs=1e-5)
    assert [acc for _, _, acc in edge] == pytest.approx(curve.accuracy, abs=1e-9)


def test_summaries_are_measured_against_the_corner_plane():
    grid = barycentric_grid(2)
    corners = [1.0, 2.0, 3.0]
    plane = [sum(w * c for w, c in zip(ws, corners)) for ws in grid]
    bumps = [0.0 if 1.0 in ws else b for ws, b in zip(grid, [0.5, 0.01, 0.2, 0.04, 0.3, 0.0])]
    loss = [p + b for p, b in zip(plane, bumps)]
    corner_loss, max_loss, max_barrier, near = summarize(grid, loss, epsilon=0.05)
    assert corner_loss == corners and max_loss == pytest.approx(3.0)
    assert max_barrier == pytest.approx(max(bumps))
    assert near == pytest.approx(sum(b <= 0.05 for b in bumps) / len(bumps))


def test_the_surface_of_one_model_with_itself_is_flat(vit_three):
    a = vit_three[0]
    s = simplex_surface(a, a, a, load_data("digits"), resolution=3, max_examples=64)
    assert max(s.loss) - min(s.loss) < 1e-5 and s.near_zero_fraction == 1.0 and abs(s.max_barrier) < 1e-5


def test_simplex_cli_json_and_figure(tmp_path, capsys):
    html = tmp_path / "surface.html"
    code = main(["simplex", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--resolution", "3",
                 "--max-examples", "64", "--json", "--html", str(html)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    for key in ("weights", "loss", "accuracy", "corner_loss", "max_loss", "max_barrier", "near_zero_fraction",
                "epsilon", "resolution", "method"):
        assert key in out, key
    assert len(out["weights"]) == 10 and out["method"] == "none" and out["epsilon"] == 0.05
    assert max(out["loss"]) == pytest.approx(out["max_loss"])
    assert html.is_file() and "plotly" in html.read_text()[:5000].lower()
    run = RunStore().get(out["run"])
    assert run.kind == "simplex" and run.all_models == ["zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2"]


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv, message", [
    (["zoo:vit-digits/0", "zoo:vit-digits/1"], "exactly three models"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:gpt-shakespeare/0"], "different architectures"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--resolution", "0"], "--resolution must be"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--epsilon", "-1"], "--epsilon must be"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--method", "learned", "--mlp", "scaled_perm"],
     "not positively homogeneous"),
])
def test_bad_simplex_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    before = len(RunStore().list())
    html = tmp_path / "never.html"
    assert main(["simplex", *argv, "--html", str(html)]) == 2
    assert message in _error_line(capsys)
    assert not html.exists() and len(RunStore().list()) == before


def test_models_of_different_sizes_are_refused(tmp_path, capsys):
    paths = []
    for i, width in enumerate((32, 32, 48)):
        model = random_model(tiny_config("vit", width=width), seed=i)
        paths.append(str(save_model(model, tmp_path / f"m{i}")))
    assert main(["simplex", *paths, "--data", "digits"]) == 2
    assert "models of different widths" in _error_line(capsys)


def test_an_html_target_in_a_missing_folder_is_refused_before_work(tmp_path, capsys):
    argv = ["simplex", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2",
            "--html", str(tmp_path / "missing" / "x.html")]
    assert main(argv) == 2 and "does not exist" in _error_line(capsys)


def test_resolution_below_one_is_refused_in_the_api():
    with pytest.raises(SymalignError, match="at least 1"):
        barycentric_grid(0)


def test_corner_values_of_side_by_side_panels_point_inwards():
    """Two panels side by side put one's B value next to the other's A value: set outwards they ran
    together ("0.0680.180"); each bottom label is anchored inwards from its corner, on one line."""
    from symalign.plots.simplex import simplex_figures

    weights = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3]]
    surface = {"weights": weights, "loss": [0.068, 0.18, 0.1, 0.5], "corner_loss": [0.068, 0.18, 0.1],
               "max_barrier": 0.4, "near_zero_fraction": 0.5}
    fig = simplex_figures([("none", surface), ("weight", surface)])
    corners = [a for a in fig.layout.annotations if "<b>" in a.text]
    assert len(corners) == 6
    for panel in (corners[:3], corners[3:]):
        a, b, c = panel
        assert (a.xanchor, b.xanchor) == ("left", "right") and "<br>" not in a.text + b.text
        assert a.x == 0.0 and b.x == 1.0  # at the corners themselves, not pushed outside the triangle
