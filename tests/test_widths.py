"""The barrier against width (issue #44): the width family's recipes, the `width` preset's pairs, the
width table regrouping real sweep cells, its figure and claim, the CLI's block, the app's chart, and
the report's section."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from symalign.cli import main
from symalign.errors import SymalignError
from symalign.plots.interpolation import width_figure
from symalign.runs import RunStore
from symalign.sweeps.grid import preset_grid
from symalign.sweeps.widths import width_claim, width_of, width_table
from symalign.train.recipes import RECIPES, WIDTH_OF, WIDTHS, width_member
from symalign.zoo import zoo_dir

ROOT = Path(__file__).resolve().parents[1]


def test_a_width_member_is_its_base_recipe_with_only_the_width_changed():
    for base, widths in WIDTHS.items():
        assert width_member(base, RECIPES[base].model["width"]) == base  # the base width is the base recipe
        ratio = RECIPES[base].model["mlp"] / RECIPES[base].model["width"]
        for width in widths:
            member = RECIPES[width_member(base, width)]
            assert WIDTH_OF[member.name] == width and member.model["width"] == width
            assert member.model["mlp"] == ratio * width and width % member.model["heads"] == 0
            kept = {k: v for k, v in asdict(member).items() if k not in ("name", "model", "seeds", "description")}
            assert kept == {k: v for k, v in asdict(RECIPES[base]).items() if k in kept}
            assert {k: v for k, v in member.model.items() if k not in ("width", "mlp")} == \
                {k: v for k, v in RECIPES[base].model.items() if k not in ("width", "mlp")}


@pytest.mark.parametrize("family", sorted(WIDTHS))
def test_the_width_preset_pairs_seeds_0_and_1_at_each_width(family):
    grid = preset_grid("width", family)
    assert [width_of(a) for a, _ in grid.pairs] == list(WIDTHS[family])
    for a, b in grid.pairs:
        assert a.endswith("/0") and b.endswith("/1") and a[:-2] == b[:-2]
    assert [r.method for r in grid.rows] == ["none", "weight", "learned"]


def test_the_width_preset_refuses_a_family_without_widths_or_a_zoo_that_lacks_a_member(tmp_path, monkeypatch):
    with pytest.raises(SymalignError, match="no width family"):
        preset_grid("width", "bert-shakespeare")
    manifest = json.loads((zoo_dir() / "manifest.json").read_text())
    manifest["models"] = [e for e in manifest["models"] if e["recipe"] != "vit-digits-w32"]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("SYMALIGN_ZOO", str(tmp_path))
    with pytest.raises(SymalignError, match="lacks vit-digits-w32.*symalign zoo build --recipes vit-digits-w32"):
        preset_grid("width", "vit-digits")


def test_a_sweep_file_with_the_width_preset_keeps_the_presets_pairs(tmp_path):
    from symalign.sweeps import read_grid

    path = tmp_path / "width.toml"
    path.write_text('preset = "width"\nfamily = "gpt-shakespeare"\n')
    assert read_grid(path).pairs == preset_grid("width", "gpt-shakespeare").pairs


def test_the_width_table_is_empty_unless_cells_span_two_widths():
    one = pd.DataFrame([{"row": "vanilla", "a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", "barrier": 1.0}])
    assert width_table(one).empty
    mixed = pd.DataFrame([{"row": "vanilla", "a": "zoo:vit-digits-w16/0", "b": "zoo:vit-digits/1", "barrier": 1.0},
                          {"row": "vanilla", "a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", "barrier": 1.0}])
    assert width_table(mixed).empty  # a pair across widths is not a point on the curve


@pytest.fixture(scope="module")
def width_sweep(tmp_path_factory):
    """A real sweep over the two narrowest ViT widths (vanilla and weight matching), from the CLI."""
    folder = tmp_path_factory.mktemp("width-sweep")
    narrow = [width_member("vit-digits", w) for w in WIDTHS["vit-digits"][:2]]
    grid = folder / "width.toml"
    grid.write_text("pairs = [" + ", ".join(f'["zoo:{m}/0", "zoo:{m}/1"]' for m in narrow) + "]\n"
                    'points = 5\n[[rows]]\nname = "vanilla"\nmethod = "none"\n'
                    '[[rows]]\nname = "weight (all)"\nmethod = "weight"\nclasses = "all"\n')
    return folder, grid


@pytest.mark.slow
def test_a_sweep_over_widths_prints_and_writes_the_barrier_against_width(width_sweep, capsys):
    folder, grid = width_sweep
    assert main(["sweep", str(grid), "--executor", "serial", "--out", str(folder / "out")]) == 0
    printed = capsys.readouterr().out
    assert "the barrier against width" in printed
    (sweep,) = [r for r in RunStore().list(kind="sweep") if r.label == "width"]
    cells = pd.DataFrame(sweep.metrics["cells"])
    table = pd.read_csv(folder / "out" / "widths.csv")
    assert table["width"].unique().tolist() == list(WIDTHS["vit-digits"][:2])
    for _, line in table.iterrows():  # each line is the cells' own numbers, regrouped
        at = cells[cells["a"].map(width_of) == line["width"]]
        barrier = at[at["row"] == line["row"]]["barrier"].mean()
        vanilla = at[at["row"] == "vanilla"]["barrier"].mean()
        assert line["barrier"] == pytest.approx(barrier) and vanilla > 0.5
        assert line["closed"] == pytest.approx(1 - barrier / vanilla)
        assert f"{line['barrier']:.4f}" in printed
    weight = table[table["row"] == "weight (all)"].sort_values("width")["closed"].tolist()
    # the science the view exists for, on this family: weight matching closes 5% at width 16 and 25% at 32
    assert weight[1] > weight[0] + 0.08
    assert "agrees" in width_claim(width_table(cells)) and "does not" not in width_claim(width_table(cells))

    fig = width_figure(table.to_dict(orient="records"), {"vanilla": "none", "weight (all)": "weight"})
    barrier_traces = [t for t in fig.data if t.xaxis == "x"]
    closed_traces = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in barrier_traces] == ["vanilla", "weight (all)"]
    assert [t.name for t in closed_traces] == ["weight (all)"]  # vanilla closes nothing by definition
    assert list(closed_traces[0].y) == pytest.approx([100 * c for c in weight])
    assert fig.layout.xaxis.type == "log"

    at = AppTest.from_file(str(ROOT / "app_pages" / "runs.py"), default_timeout=120)
    at.query_params["run"] = sweep.id
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (chart,) = [c for c in charts if "against width" in c["layout"]["title"]["text"]]
    drawn = [t for t in chart["data"] if t.get("xaxis", "x") == "x" and t["name"] == "weight (all)"]
    assert drawn[0]["y"] == pytest.approx(table[table["row"] == "weight (all)"].sort_values("width")["barrier"])

    anatomy = AppTest.from_file(str(ROOT / "app_pages" / "barrier_anatomy.py"), default_timeout=120).run()
    anatomy.radio(key="anatomy-view").set_value("Against width").run()  # the "Where the barrier lives" page
    assert not anatomy.exception and not anatomy.error
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in anatomy.get("plotly_chart")]
    assert any("against width" in t for t in titles)
    assert any("agrees" in c.value for c in anatomy.caption)


def test_the_report_replaces_its_width_section_in_place(tmp_path):
    from research.docgen.results_report import with_section

    WIDTH_HEADING = "## The barrier against width"
    report = "# Results\n\n## vit-digits\n\nrows\n"
    first = with_section(report, f"{WIDTH_HEADING}\n\nold\n")
    assert first.startswith(report.rstrip("\n")) and first.endswith("old\n")
    middle = first + "\n## later\n\nkept\n"
    second = with_section(middle, f"{WIDTH_HEADING}\n\nnew\n")
    assert "old" not in second and "new" in second and second.endswith("## later\n\nkept\n")
    assert second.count(WIDTH_HEADING) == 1


def test_an_unbuilt_width_family_is_named_by_the_cli(tmp_path, monkeypatch, capsys):
    (tmp_path / "manifest.json").write_text(json.dumps({"models": []}))
    monkeypatch.setenv("SYMALIGN_ZOO", str(tmp_path))
    assert main(["sweep", "--preset", "width", "--family", "vit-digits"]) != 0
    assert "symalign zoo build --recipes" in capsys.readouterr().err
