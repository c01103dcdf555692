"""Sweeps: every cell is the same computation as a direct alignment, a resumed sweep recomputes
nothing that finished, Ray and the serial executor produce the same table, and a bad grid is
refused (naming the cell) before anything runs."""

from __future__ import annotations

import json
import os
import sys

import pandas as pd
import pytest

from symalign.cli import main
from symalign.data import load_data
from symalign.errors import SymalignError
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model
from symalign.runs import RunStore
from symalign.sweeps import preset_grid, read_grid, run_sweep
from symalign.sweeps.grid import PRESETS

A, B = "zoo:vit-digits/0", "zoo:vit-digits/1"
SMALL = f"""
name = "small"
pairs = [["{A}", "{B}"]]
points = 5
max_examples = 64

[[rows]]
name = "vanilla"
method = "none"

[[rows]]
name = "weight perms"
method = "weight"
classes = "permutations"
"""


def sweep_file(tmp_path, text: str = SMALL, name: str = "sweep.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def direct_barrier(method: str, classes: dict) -> float:
    a, b = load_model(A), load_model(B)
    aligned = align(a, b, AlignConfig(method=method, classes=classes, data="digits")).aligned
    return interpolation_curve(a, aligned, load_data("digits"), points=5, max_examples=64).barrier


def test_serial_sweep_is_the_direct_computation_and_resumes_without_recomputing(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    grid = read_grid(sweep_file(tmp_path))
    seen = []
    first = run_sweep(grid, executor="serial", store=store, progress=lambda d, t, row: seen.append((d, t)))
    assert (first.executed, first.reused, first.executor) == (2, 0, "serial")
    assert seen == [(1, 2), (2, 2)]
    cells = first.cells.set_index("row")
    assert cells.loc["vanilla", "barrier"] == pytest.approx(direct_barrier("none", {}), abs=1e-6)
    assert cells.loc["weight perms", "barrier"] == pytest.approx(
        direct_barrier("weight", {"mlp": "perm", "heads": "perm"}), abs=1e-6)
    assert abs(cells.loc["vanilla", "barrier"] - cells.loc["weight perms", "barrier"]) > 0.1  # the rows differ

    again = run_sweep(grid, executor="serial", store=store)
    assert (again.executed, again.reused) == (0, 2)
    assert again.cells["barrier"].tolist() == first.cells["barrier"].tolist()
    assert again.cells["run_id"].tolist() == first.cells["run_id"].tolist()

    grid.rows = grid.rows + read_grid(sweep_file(tmp_path, SMALL.replace('"permutations"', '"all"'))).rows[1:]
    grid.rows[-1] = type(grid.rows[-1])("weight all", "weight", grid.rows[-1].classes)
    grown = run_sweep(grid, executor="serial", store=store)
    assert (grown.executed, grown.reused) == (1, 2)
    assert len(store.list(kind="align")) == 3  # three cells computed in all, never one twice
    sweeps = store.list(kind="sweep")
    assert len(sweeps) == 3 and all(s.state == "done" for s in sweeps)
    assert sweeps[0].metrics["executed"] == 1 and len(sweeps[0].metrics["cells"]) == 3


def one_row(grid, keep: str = "weight perms"):
    """The grid with one row: a Ray cell costs a worker process that imports torch (about 10 s of CPU), and what
    a test checks of the executor one cell shows."""
    grid.rows = [r for r in grid.rows if r.name == keep]
    return grid


@pytest.mark.slow
def test_ray_executor_gives_the_serial_table(tmp_path, monkeypatch):
    """A local cluster the sweep starts itself (and shuts down): the serial executor's number, computed in Ray's
    worker process; the two-cell table on Ray is test_each_ray_cell_asks_for_one_gpu_on_a_cluster_with_gpus's."""
    grid = one_row(read_grid(sweep_file(tmp_path)))
    serial = run_sweep(grid, executor="serial", store=RunStore(tmp_path / "serial.sqlite"))
    store = RunStore(tmp_path / "ray.sqlite")
    on_ray = run_sweep(grid, executor="ray", store=store)
    assert on_ray.executor == "ray" and on_ray.executed == 1
    assert on_ray.cells["barrier"].tolist() == pytest.approx(serial.cells["barrier"].tolist(), abs=1e-5)
    runs = store.list(kind="align")
    assert len(runs) == 1 and all(r.state == "done" and r.source == "sweep" for r in runs)
    assert all(r.pid != os.getpid() for r in runs)  # the cell ran in Ray's worker process
    import ray

    assert not ray.is_initialized()  # the cluster the sweep started is gone with it

    def no_cluster(*args, **kwargs):
        raise AssertionError("a sweep with nothing to run started a Ray cluster")

    monkeypatch.setattr(ray, "init", no_cluster)  # every cell is in the history: nothing to start
    resumed = run_sweep(grid, executor="ray", store=store)
    assert (resumed.executed, resumed.reused) == (0, 1)


def test_cli_sweep_writes_tables_and_json(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file(tmp_path)), "--executor", "serial", "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["executor"] == "serial" and printed["executed"] + printed["reused"] == 2
    for cell in printed["cells"]:
        assert {"a", "b", "method", "classes", "barrier", "barrier_mean", "run_id", "reused"} <= set(cell)
    table = pd.read_parquet(out / "cells.parquet")
    assert table["barrier"].tolist() == pytest.approx([c["barrier"] for c in printed["cells"]])
    assert pd.read_csv(out / "cells.csv")["barrier"].tolist() == pytest.approx(table["barrier"].tolist())
    summary = pd.read_csv(out / "summary.csv")
    assert summary["row"].tolist() == ["vanilla", "weight perms"]
    assert summary["mean"].tolist() == pytest.approx(table["barrier"].tolist())  # one pair: its own barrier


BAD = [
    (SMALL.replace('method = "weight"', 'method = "telepathy"'), "row 2 (weight perms): unknown method 'telepathy'"),
    (SMALL.replace('classes = "permutations"', 'classes = {mlp = "swirl"}'), "weight perms"),
    (SMALL.replace('classes = "permutations"', 'classes = "most"'), "unknown classes 'most'"),
    (SMALL.replace('classes = "permutations"', 'classes = {mlp = "orthogonal"}'),
     f"cell (weight perms, {A} ↔ {B}, seed 0)"),
    (SMALL.replace(B, "zoo:vit-digits/9"), "no zoo model 'zoo:vit-digits/9'"),
    (SMALL.replace(B, "zoo:gpt-shakespeare/0"),
     f"cell (vanilla, {A} ↔ zoo:gpt-shakespeare/0, seed 0): models of different"),
    (SMALL.replace("points = 5", "points = 1"), "points must be a positive integer"),
    (SMALL.replace("points = 5", "colour = 5"), "unknown key(s) colour"),
    (SMALL.replace("[[rows]]", "[[rows", 1), "is not a valid sweep file"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_bad_sweep_files_are_refused_in_one_line_before_anything_runs(tmp_path, capsys, monkeypatch, text, message):
    store_path = tmp_path / "home" / "runs.sqlite"
    monkeypatch.setenv("SYMALIGN_HOME", str(store_path.parent))
    assert main(["sweep", str(sweep_file(tmp_path, text)), "--executor", "serial"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("symalign: error:") and "\n" not in err and message in err
    assert RunStore(store_path).list() == []  # nothing was recorded, so nothing ran


def test_unreachable_ray_address_and_bad_preset_are_one_line(tmp_path, capsys):
    assert main(["sweep", str(sweep_file(tmp_path)), "--executor", "ray", "--address", "127.0.0.1:9"]) == 2
    assert "no Ray cluster answers" in capsys.readouterr().err
    assert main(["sweep", "--preset", "table9", "--family", "vit-digits"]) == 2
    assert "unknown preset 'table9'" in capsys.readouterr().err
    assert main(["sweep", "--preset", "table1"]) == 2
    assert "needs --family" in capsys.readouterr().err
    with pytest.raises(SymalignError, match="no sweep file"):
        read_grid(tmp_path / "missing.toml")


def test_presets_cover_the_table_and_the_component_ablation():
    grid = preset_grid("table1", "vit-digits", seeds=[0, 1])
    assert [r.name for r in grid.rows] == [name for name, _, _ in PRESETS["table1"]]
    assert len(grid.pairs) == 3
    cells = grid.cells()
    learned = [c for c in cells if c.row.method == "learned"]
    assert len(learned) == 2 * 3 * 2 and len(cells) == 5 * 3 + len(learned)  # seeds only where a seed matters
    # Theus et al.'s permutation-only rows permute everything `all` rotates, the residual stream included
    perm = next(r for r in grid.rows if r.name == "learned (all-perm)").class_dict
    assert perm == {"mlp": "perm", "heads": "perm", "qk": "perm", "vo": "perm", "residual": "perm"}
    components = preset_grid("components", "gpt-shakespeare")
    off = {r.name: {k for k, v in r.class_dict.items() if v == "none"} for r in components.rows}
    assert off["all classes"] == set() and off["all but residual"] == {"residual"} and len(off) == 7
    rescaled = components.rows[-1].class_dict  # the same classes with Zhang et al.'s rescaling added to the rotations
    assert {k: v for k, v in rescaled.items() if k not in ("qk", "vo")} == {
        k: v for k, v in components.rows[0].class_dict.items() if k not in ("qk", "vo")}
    assert rescaled["qk"] == rescaled["vo"] == "orthogonal+rescale"


def test_yaml_and_json_sweep_files_read_like_toml(tmp_path):
    import tomllib
    import yaml

    spec = tomllib.loads(SMALL)
    from_yaml = read_grid(sweep_file(tmp_path, yaml.safe_dump(spec), "s.yaml"))
    from_json = read_grid(sweep_file(tmp_path, json.dumps(spec), "s.json"))
    from_toml = read_grid(sweep_file(tmp_path))
    assert from_yaml.to_json() == from_json.to_json() == from_toml.to_json()


@pytest.mark.slow
def test_the_report_regenerates_with_its_documented_command(tmp_path, monkeypatch):
    """`python -m research.docgen.results_report` (shrunk by its quick-check options) writes the report from
    sweeps recorded in the run history: its numbers are those sweeps' means ± stds, a second run
    recomputes nothing, and every claim paragraph is there."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    home, out = tmp_path / "home", tmp_path / "docs" / "results.md"
    command = [sys.executable, "-m", "research.docgen.results_report", "--families", "vit-digits",
               "--executor", "serial", "--points", "3", "--max-examples", "48", "--steps", "3", "--max-sweeps", "3",
               "--out", str(out),
               "--ablations", "layer-subsets", "vit-digits:lambda-sampling", "vit-digits:wm-iterations",
               "gpt-shakespeare:data-amount",
               "--widths", "vit-digits", "--anatomy", "--field", "vit-digits"]
    env = dict(os.environ, SYMALIGN_HOME=str(home))
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True, text=True)
    report = out.read_text()
    assert (out.parent / "results" / "vit-digits.html").is_file()
    assert (out.parent / "results" / "vit-digits-width.html").is_file()  # the barrier against width (issue #44)
    anatomy = report[report.index("## Where the barrier lives"):]  # the four views, each with its numbers
    for view in ("**By parameter group.**", "**Feature correlations.**", "**Learned vs weight matching.**",
                 "**The soft path unrounded**"):
        assert view in anatomy
    field = report[report.index("## The field side by side"):]  # issue #45: peers and every Table 1 row
    from symalign.sweeps.peers import PEERS

    for peer in PEERS:
        assert re.search(rf"^\| {re.escape(peer.name)} \| [\d.]+ ± [\d.]+ \| [\d.]+% ± [\d.]+% \|$", field, re.M), peer
    assert "merges at 61.15% where Simple averaging gives 7.60%" in field  # Zhang's cells as printed (issue #69)
    assert re.search(r"OT-ACTS above averaging: (agrees|contradicted|not separable)", field)  # by the one verdict rule
    zoo_row = re.search(r"^\| learned \(all-perm\) \| ([\d.]+ ± [\d.]+) \|", report, re.M).group(1)
    theus = next(line for line in field.splitlines() if line.startswith("| learned (all-perm) "))
    assert f"| 0.45 ± 0.02 / {zoo_row} |" in theus  # the paper's value and ± beside the family table's own
    assert "| 0.53 ± 0.07 / not run | 0.29 ± 0.02 / not run |" in theus  # every data set's cell, with its ±
    width = report[report.index("## The barrier against width"):report.index("## Where the barrier lives")]
    assert "| width | vanilla | weight (all) | learned (all) |" in width and "Ainsworth" in width
    assert [line.split(" |")[0] for line in width.splitlines() if line[:3] in ("| 1", "| 3", "| 6")] == \
        ["| 16", "| 32", "| 64", "| 128"]
    assert "Quick check, not the numbers to quote" in report and "## vit-digits" in report
    assert report.count("**") >= 2 * 5  # the quick-check line and four claim paragraphs, bold-led
    for claim in ("Learned matching closes the barrier", "The ordering vanilla > activation", "Rotations beat",
                  "Which symmetry matters most"):
        assert claim in report
    # Theus et al. Fig. 6: both series (permutations and orthogonal maps) on one chart, each described
    fig6 = report[report.index("### vit-digits: wm-iterations"):].split("\n### ")[0]
    assert "Theus et al. Fig. 6" in fig6 and "all-perm: " in fig6 and "all: " in fig6
    assert (out.parent / "results" / "vit-digits-wm-iterations-series.html").is_file()
    assert (out.parent / "results" / "vit-digits-lambda-sampling-curves.html").is_file()  # Theus et al. Fig. 5
    assert "The paths themselves" in report and "peaks at λ = " in report
    assert "Per seed pair it breaks" in report or "and on every seed pair" in report  # the ordering, per pair
    store = RunStore(home / "runs.sqlite")
    for preset in ("table1", "components"):
        grid = preset_grid(preset, "vit-digits").capped(3)
        grid.points, grid.max_examples, grid.steps = 3, 48, 3
        result = run_sweep(grid, executor="serial", store=store)
        assert (result.executed, result.reused) == (0, len(grid.cells()))  # the report's sweeps, all recorded
        for row in result.summary.to_dict(orient="records"):
            shown = re.search(rf"\| {re.escape(row['row'])} \| ([\d.]+) ± ([\d.]+) \|", report)
            assert shown, row["row"]
            assert (float(shown.group(1)), float(shown.group(2))) == (round(row["mean"], 2), round(row["std"], 2))
            assert f"± {row['sem']:.2f} ({row['n']}) |" in report.split(f"| {row['row']} |")[1].split("\n")[0]
    for preset in ("layer-subsets", "lambda-sampling"):  # the ablation sections: the sweep's own summary
        assert f"### vit-digits: {preset}" in report
        assert (out.parent / "results" / f"vit-digits-{preset}.html").is_file()
        grid = preset_grid(preset, "vit-digits").capped(3)
        grid.points, grid.max_examples, grid.steps = 3, 48, 3
        result = run_sweep(grid, executor="serial", store=store)
        assert result.executed == 0
        rows = result.summary.to_dict(orient="records")
        for row in rows:
            line = f"| {row['row']} | {row['mean']:.2f} ± {row['std']:.2f} | ± {row['sem']:.2f} ({row['n']}) |"
            assert line in report, line
        section = report.split(f"### vit-digits: {preset}")[1].split("###")[0]
        lowest = min(rows, key=lambda r: r["mean"])
        assert f"Lowest: {lowest['row']} ({lowest['mean']:.2f})" in section  # what the rows show, from the numbers
    assert "Theus et al. (Fig. 5)" in report.split("### vit-digits: lambda-sampling")[1]
    assert "### vit-digits: data-amount" not in report  # asked for gpt-shakespeare only
    vanilla = re.search(r"\| vanilla \| [\d.]+ ± [\d.]+ \| ([\d.]+) ± 0.07 \|", report)  # the paper's ± beside
    assert vanilla and float(vanilla.group(1)) == 1.69  # Theus et al.'s Table 1 beside the zoo
    # The second run asks for the sections the history backs (the sweeps' tables, the ablations, the width
    # section). The anatomy and the field are not read from it: they are measured again on every run, a
    # minute that checks nothing here (issue #73: CI time).
    # In this process (the first run was the documented command itself): a second interpreter's imports only
    # cost time here.
    from research.docgen import results_report

    monkeypatch.setenv("SYMALIGN_HOME", str(home))
    # the page is its records rendered: --from-records writes it again, byte for byte, running nothing; a
    # changed record changes the page
    recorded, again = out.parent / "results" / "records", tmp_path / "again.md"
    results_report.main(["--from-records", "--records", str(recorded), "--out", str(again)])
    assert again.read_text() == report
    import shutil

    changed = tmp_path / "changed"
    shutil.copytree(recorded, changed)
    import pandas as pd

    frame = pd.read_csv(changed / "sweep-vit-digits-table1.csv")
    frame.loc[frame["row"] == "vanilla", "barrier"] += 1.0
    frame.to_csv(changed / "sweep-vit-digits-table1.csv", index=False)
    results_report.main(["--from-records", "--records", str(changed), "--out", str(again)])
    assert again.read_text() != report
    before = len(store.list(kind="align"))
    results_report.main(command[command.index("--families"):command.index("--anatomy")])
    assert len(store.list(kind="align")) == before  # regenerated from the history, nothing recomputed
    assert "Quick check, not the numbers to quote" in out.read_text()


@pytest.mark.slow
def test_each_ray_cell_asks_for_one_gpu_on_a_cluster_with_gpus(tmp_path):
    """Two logical GPUs declared to a local Ray cluster: the serial executor's table, each cell given one of
    them (the sweep's `gpus` column), a cell asking for more than the cluster has refused in one line before
    any runs, and without Ray no GPU can be asked for."""
    import ray

    grid = read_grid(sweep_file(tmp_path))
    serial = run_sweep(grid, executor="serial", store=RunStore(tmp_path / "serial.sqlite"))
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        store = RunStore(tmp_path / "gpu.sqlite")
        result = run_sweep(grid, executor="ray", store=store)
        assert result.executor == "ray" and result.executed == 2 and result.cells["error"].isna().all()
        assert result.cells["barrier"].tolist() == pytest.approx(serial.cells["barrier"].tolist(), abs=1e-5)
        runs = store.list(kind="align")
        assert len(runs) == 2 and all(r.state == "done" and r.source == "sweep" and r.pid != os.getpid()
                                      for r in runs)  # the cells ran in Ray's worker processes
        assert all(g in ("0", "1") for g in result.cells["gpus"]), result.cells["gpus"].tolist()
        with pytest.raises(SymalignError, match="has 2 GPU"):
            run_sweep(grid, executor="ray", store=RunStore(tmp_path / "too-many.sqlite"), gpus_per_cell=3)
        shared = run_sweep(one_row(grid), executor="ray", store=None, gpus_per_cell=0)
        assert shared.cells["gpus"].tolist() == [""]  # asked for none: given none
        assert ray.is_initialized()  # a cluster the sweep found running is left running
    finally:
        ray.shutdown()
    with pytest.raises(SymalignError, match="GPUs are asked of Ray"):
        run_sweep(grid, executor="serial", gpus_per_cell=1)


def test_a_vanilla_row_reuses_a_recorded_barrier_run(tmp_path):
    """Align records the vanilla barrier as a `barrier` run; a sweep's vanilla cell is the same curve,
    so it is reused, not measured and recorded again (issue #56: "0 reused" beside existing runs)."""
    from symalign.sweeps.grid import grid_from_dict
    from symalign.workflows.execute import barrier_run

    store = RunStore(tmp_path / "runs.sqlite")
    run_id, curve = barrier_run("zoo:vit-digits/0", "zoo:vit-digits/1", points=3, max_examples=8, store=store)
    spec = {"pairs": [["zoo:vit-digits/0", "zoo:vit-digits/1"]], "points": 3, "max_examples": 8,
            "rows": [{"name": "vanilla", "method": "none", "classes": "none"},
                     {"name": "weight", "method": "weight", "classes": "permutations"}]}
    result = run_sweep(grid_from_dict(spec, "t"), executor="serial", store=store)
    assert (result.executed, result.reused) == (1, 1)  # the weight row is new
    vanilla = result.cells[result.cells["row"] == "vanilla"].iloc[0]
    assert vanilla["run_id"] == run_id and vanilla["barrier"] == pytest.approx(curve.barrier)
    other = dict(spec, points=5)  # other evaluation settings: a different curve, measured
    assert run_sweep(grid_from_dict(other, "t"), executor="serial", store=store).reused == 0


def test_a_capped_grid_stops_weight_matching_only_where_a_row_sets_no_sweeps_of_its_own():
    iterations = preset_grid("wm-iterations", "vit-digits")
    own = {r.name: dict(r.options).get("max_sweeps") for r in iterations.rows}
    assert {r.name: dict(r.options).get("max_sweeps") for r in iterations.capped(2).rows} == own
    table = preset_grid("table1", "vit-digits").capped(2)
    for row in table.rows:
        assert dict(row.options).get("max_sweeps") == (2 if row.method == "weight" else None), row.name


def test_a_learned_cell_never_reuses_a_run_made_under_another_default_step_count(tmp_path):
    """Issue #59 raised text's default from 300 steps to 600. A learned config now writes its steps out
    (None: the data's default), so a run recorded when the default was 300 (steps None in its record) is
    not taken for a cell asking for today's default, while one recorded with the same steps is."""
    from symalign.runs.settings import AlignSettings
    from symalign.sweeps.grid import grid_from_dict
    from symalign.sweeps.sweep import _payload, finished_runs, reusable

    a, b = "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1"
    grid = grid_from_dict({"pairs": [[a, b]], "points": 3, "max_examples": 8, "data": "shakespeare",
                           "rows": [{"name": "learned", "method": "learned", "classes": "all"}]}, "t")
    cell = grid.cells()[0]
    payload = _payload(cell, grid, "shakespeare")
    assert payload["config"]["steps"] == 600  # the default, written out
    store = RunStore(tmp_path / "runs.sqlite")
    old = dict(payload["config"], steps=None)  # what a 300-step default run recorded
    run = store.start("align", a, b, "learned", settings=AlignSettings(old, 3, 8).to_json())
    store.finish(run, {"barrier": 0.07})
    assert reusable(finished_runs(store), cell, payload) is None
    same = store.start("align", a, b, "learned", settings=AlignSettings(payload["config"], 3, 8).to_json())
    store.finish(same, {"barrier": 0.05})
    assert reusable(finished_runs(store), cell, payload).id == same


@pytest.mark.parametrize(("suffix", "missing", "said"), [(".toml", ("tomllib", "tomli"), "needs tomli"),
                                                        (".yaml", ("yaml",), "needs PyYAML")])
def test_a_missing_parser_is_named_for_its_own_format(tmp_path, monkeypatch, suffix, missing, said):
    """Each format's message names its own parser: a missing tomli (Python 3.10) was reported as missing PyYAML."""
    from symalign.sweeps.sweep_file import read_sweep_file

    for module in missing:
        monkeypatch.setitem(sys.modules, module, None)  # `import` then raises ImportError naming it
    path = tmp_path / f"grid{suffix}"
    path.write_text("models = 1\n")
    with pytest.raises(SymalignError, match=said):
        read_sweep_file(path)


def test_the_preset_table_in_docs_names_the_classes_each_preset_runs():
    """docs/sweeps.md's preset table is read as the reference: each alignment grid's row there names every
    class set its rows run (it once listed weight (permutations) for Fig. 6's series, which runs all-perm)."""
    import re
    from pathlib import Path

    from symalign.sweeps.grid import PRESETS

    doc = (Path(__file__).parents[1] / "docs" / "sweeps.md").read_text()
    checked = 0
    for preset, rows in PRESETS.items():
        line = next((ln for ln in doc.splitlines() if ln.startswith(f"| `{preset}`")), None)
        if line is None:
            continue
        for name, *_ in rows:
            match = re.match(r"\w+ \(([\w-]+)\)", name)
            if match:
                assert f"({match.group(1)})" in line, (preset, name)
                checked += 1
    assert checked >= 10
