"""Run history: CLI runs are recorded in the shared SQLite file, survive a new process, can be
filtered and deleted, and a process killed mid-run leaves the database sound."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from symalign.cli import main
from symalign.errors import SymalignError
from symalign.runs import RunStore


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.slow
def test_cli_barrier_and_align_are_recorded_with_their_metrics(home, tmp_path, capsys):
    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--max-examples", "64", "--points", "5",
                 "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", str(tmp_path / "aligned"), "--barrier",
                 "--json"]) == 0
    aligned = json.loads(capsys.readouterr().out)
    store = RunStore(home / "runs.sqlite")  # a fresh handle, as a restarted app would open
    runs = {r.kind: r for r in store.list()}
    assert set(runs) == {"barrier", "align"}
    assert runs["barrier"].id == printed["run"] and runs["barrier"].state == "done"
    assert runs["barrier"].metrics["barrier"] == pytest.approx(printed["barrier"])
    assert runs["barrier"].curve["loss"] == pytest.approx(printed["loss"])
    assert runs["align"].metrics["barrier"] == pytest.approx(aligned["barrier"])
    assert runs["align"].artifacts == str(tmp_path / "aligned") and runs["align"].source == "cli"
    assert store.list(kind="align")[0].id == aligned["run"]
    assert store.list(model="gpt-shakespeare") == []
    assert store.list(method="weight")[0].kind == "align"


def test_no_record_leaves_the_history_alone(home, capsys):
    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/0", "--max-examples", "16", "--points", "3",
                 "--no-record"]) == 0
    assert RunStore(home / "runs.sqlite").list() == []


def test_refused_input_records_nothing_and_a_failure_during_work_is_recorded(home, tmp_path, capsys):
    assert main(["align", "zoo:vit-digits/0", "zoo:gpt-shakespeare/0", "--out", str(tmp_path / "x")]) == 2
    assert "different architectures" in capsys.readouterr().err
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--residual", "invertible",
                 "--out", str(tmp_path / "y")]) == 2
    assert "not admissible" in capsys.readouterr().err
    assert RunStore(home / "runs.sqlite").list() == [] and not (tmp_path / "x").exists()
    # data that does not fit the model is found once the work has started: the run says why it failed
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "learned", "--data", "shakespeare",
                 "--steps", "2", "--out", str(tmp_path / "z")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    (run,) = RunStore(home / "runs.sqlite").list()
    assert run.state == "failed"
    assert run.error == "shakespeare is causal-lm text data but the model is a vit (image-classification)"
    assert main(["align", "/nonexistent/model", "zoo:vit-digits/1", "--out", str(tmp_path / "z")]) == 2
    assert len(RunStore(home / "runs.sqlite").list()) == 1  # a path that is not a model starts no run


def test_delete_removes_the_run_and_only_owned_artifacts(home, tmp_path):
    store = RunStore(home / "runs.sqlite")
    owned, foreign = tmp_path / "owned", tmp_path / "foreign"
    owned.mkdir(), foreign.mkdir()
    a = store.start("align", "A", "B", "weight", {"owns_artifacts": True})
    store.finish(a, {"barrier": 1.0}, owned)
    b = store.start("align", "A", "B", "weight", {"owns_artifacts": False})
    store.finish(b, {"barrier": 2.0}, foreign)
    store.delete(a)
    store.delete(b)
    assert store.list() == [] and not owned.exists() and foreign.exists()
    with pytest.raises(SymalignError, match="no run"):
        store.get(a)


@pytest.mark.slow
def test_a_killed_process_leaves_the_database_sound_and_earlier_runs_intact(home, tmp_path):
    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--max-examples", "32", "--points", "3"]) == 0
    store = RunStore(home / "runs.sqlite")
    (earlier,) = store.list()
    env = dict(os.environ, SYMALIGN_HOME=str(home))
    proc = subprocess.Popen([sys.executable, "-m", "symalign.cli", "align", "zoo:vit-digits/0", "zoo:vit-digits/1",
                             "--method", "learned", "--data", "digits", "--steps", "100000",
                             "--out", str(tmp_path / "never")], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(store.list()) < 2:
            time.sleep(0.5)
        assert len(store.list()) == 2, "the killed run never started"
        time.sleep(3)  # well inside the optimisation
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    fresh = RunStore(home / "runs.sqlite")
    assert fresh.check() == "ok"
    runs = {r.id: r for r in fresh.list()}
    assert runs[earlier.id].metrics == earlier.metrics and runs[earlier.id].state == "done"
    (killed,) = [r for r in runs.values() if r.id != earlier.id]
    assert killed.state == "interrupted" and killed.kind == "align"
    assert main(["runs", "list"]) == 0  # and the CLI still reads it


def test_work_stopped_by_a_control_exception_is_not_left_running(home):
    """Streamlit stops a script by raising a BaseException in it; the row must not stay `running`."""
    from symalign.runs.recording import recorded
    from symalign.runs.settings import AlignSettings

    class ScriptStopped(BaseException):
        pass

    store = RunStore(home / "runs.sqlite")
    with pytest.raises(ScriptStopped):
        with recorded(store, "align", "A", "B", "weight", AlignSettings({}), "app", ""):
            raise ScriptStopped()
    (run,) = store.list()
    assert run.status == "failed" and run.error == "interrupted before it finished"


def test_every_run_kind_records_and_reads_back_its_typed_settings(home):
    """A run's settings go in as its kind's class and come back as the same object; the wrong class
    for a kind is refused before anything is recorded."""
    from symalign.runs.recording import recorded
    from symalign.runs.settings import SETTINGS, AlignSettings, BarrierSettings, SweepSettings

    store = RunStore(home / "runs.sqlite")
    examples = [AlignSettings({"method": "weight"}, 5, 64), BarrierSettings("digits", 7),
                SweepSettings({"name": "g", "pairs": [["a", "b"]], "points": 3}, "ray", "127.0.0.1:1")]
    for settings in examples:
        kind = next(k for k, c in SETTINGS.items() if isinstance(settings, c))
        with recorded(store, kind, "A", "B", "m", settings, "api", "") as run:
            run.finish({})
        assert store.get(run.id).typed_settings == settings
    assert store.get(run.id).settings["points"] == 3  # a sweep's grid is stored flat, as before
    with pytest.raises(TypeError, match="records BarrierSettings"):
        with recorded(store, "barrier", "A", "B", "m", examples[0], "api", ""):
            pass
    assert len(store.list()) == 3


def test_the_ablation_matrix_reads_at_a_glance():
    """Issue #70: mean ± std beside the row name (not behind a scroll), readable names with units, counts as
    integers, accuracy in points with one decimal, empty metrics left out, and a note on a row that goes the
    unexpected way (weight permutations above vanilla). Issue #56: barriers coloured on their own span."""
    import pandas as pd

    from symalign.sweeps.matrix import readable_cells, readable_matrix
    from symalign.ui.runs import barrier_colour

    pair = "zoo:vit-digits/0 ↔ zoo:vit-digits/1"
    summary = pd.DataFrame([{"row": "vanilla", "method": "none", pair: 2.87, "mean": 2.8726, "std": 0.934, "n": 3,
                             "sem": 0.539, "accuracy_mean": 75.0926, "accuracy_std": 11.73},
                            {"row": "weight (permutations)", "method": "weight", pair: 3.16, "mean": 3.1574,
                             "std": 1.668, "n": 3, "sem": 0.963, "accuracy_mean": 71.67, "accuracy_std": 14.6},
                            {"row": "weight (all)", "method": "weight", pair: 1.50, "mean": 1.4957, "std": 0.732,
                             "n": 3, "sem": 0.423, "accuracy_mean": 26.38, "accuracy_std": 11.07}])
    rows = [{"name": "weight (permutations)", "classes": {"mlp": "perm", "heads": "perm", "residual": "none"}},
            {"name": "weight (all)", "classes": {"mlp": "perm", "residual": "orthogonal"}}]
    table = readable_matrix(summary, rows)
    assert list(table.columns[:4]) == ["row", "barrier, mean ± std", "± SE (n pairs)",
                                       "accuracy barrier (pp), mean ± std"]
    assert table["barrier, mean ± std"][0] == "2.873 ± 0.934" and table["± SE (n pairs)"][0] == "0.539 (3)"
    assert table["accuracy barrier (pp), mean ± std"][0] == "75.1 ± 11.7"
    assert "pair 0↔1" in table.columns and pair not in table.columns  # one family: the short form
    notes = dict(zip(table["row"], table["note"]))
    assert notes["weight (permutations)"].startswith("above vanilla (3.16 > 2.87): its classes leave the residual")
    assert notes["vanilla"] == notes["weight (all)"] == ""  # below vanilla: no note
    cells = pd.DataFrame([{"row": "vanilla", "a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", "seed": 0.0,
                           "barrier": 3.949363, "barrier_mean": 3.9501, "accuracy_barrier": 88.6111,
                           "pppl_barrier": None, "seconds": 3.98, "gpus": ""}])
    shown = readable_cells(cells)
    assert "pseudo-perplexity barrier" not in shown.columns and "gpus" not in shown.columns  # empty: left out
    assert shown["pair"][0] == "vit-digits 0↔1" and shown["matcher seed"][0] == 0
    assert {"barrier (above the endpoint line)", "barrier (above the mean endpoint loss)"} <= set(shown.columns)
    assert shown["accuracy barrier (pp)"][0] == 88.6
    low, high = barrier_colour(0.99, 4.9, 0.99), barrier_colour(4.9, 4.9, 0.99)
    assert low != high and low == barrier_colour(0.0, 4.9, 0.99)  # the span's ends, clipped below
    assert barrier_colour(float("nan"), 4.9, 0.99) == ""


def test_runs_are_renamed_and_tagged_and_the_history_filters_by_tag(tmp_path, monkeypatch, capsys):
    """Issue #56: a run gets a user's name and tags (CLI and store), an old database gains the column,
    and `runs list --tags` keeps the tagged ones."""
    from symalign.cli import main
    from symalign.runs import RunStore

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path))
    store = RunStore()
    first = store.start("barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "none")
    second = store.start("barrier", "zoo:vit-digits/0", "zoo:vit-digits/2", "none")
    assert main(["runs", "rename", first, "--label", "lecture 3: before alignment"]) == 0
    assert main(["runs", "tag", first, "--tags", "lecture", "lecture", " ", "vit"]) == 0
    run = store.get(first)
    assert run.label == "lecture 3: before alignment" and run.tags == ["lecture", "vit"]
    capsys.readouterr()
    assert main(["runs", "list", "--tags", "lecture"]) == 0
    listed = capsys.readouterr().out
    assert first in listed and second not in listed and "lecture 3" in listed
    assert main(["runs", "rename", "no-such-run", "--label", "x"]) != 0  # one clear message
    assert "no run" in capsys.readouterr().err
    from symalign.runs.table import run_label

    assert run_label(store.get(second)).endswith("· vit-digits 0↔2")  # a generated name names its models
    third = store.start("barrier", "zoo:vit-digits/0", "zoo:vit-digits/2", "none", settings={"split": "train"})
    assert run_label(store.get(third)).endswith("· vit-digits 0↔2 · train split")  # told apart from eval


def test_simplex_warns_of_minutes_before_its_learned_default():
    """Issue #56: Simplex said "about 40 s" and its defaults (none, weight, learned) took 403 s. Measured on 2
    idle cores (docs/benchmarks.md): gpt-shakespeare's defaults (learned at 600 steps) take minutes,
    vit-digits' (600 steps) under one."""
    from symalign.runs.durations import estimate_text, simplex_typical

    seconds, text = simplex_typical(("none", "weight", "learned"), 600, "gpt-shakespeare")
    assert 400 <= seconds <= 1600 and "600 steps" in text and "min" in text
    assert simplex_typical(("none", "weight", "learned"), 30, "gpt-shakespeare")[0] < seconds / 3  # scaled by steps
    fast, said = simplex_typical(("none", "weight"), 600, "gpt-shakespeare")
    assert fast < seconds / 3 and "steps" not in said
    vit, said = simplex_typical(("none", "weight", "learned"), 600)
    assert 20 <= vit < 90 and "min" not in said
    assert estimate_text(None, text).startswith("typically about")


def test_a_sweeps_typical_time_counts_its_cells():
    from symalign.runs.durations import sweep_typical
    from symalign.sweeps import preset_grid

    quick = preset_grid("quick", "vit-digits")
    seconds, _ = sweep_typical([c.row.method for c in quick.cells()])
    assert 5 <= seconds <= 40  # measured: 11 s for its 9 cells on 2 idle cores
    learned, said = sweep_typical([c.row.method for c in preset_grid("table1", "vit-digits").cells()])
    assert learned > 2 * 60 and "learned cells" in said  # six learned cells at 600 steps


def test_typical_times_scale_with_the_family_and_the_steps_and_say_which_model_they_are_for():
    """Issue #56: estimates before a run where this machine has none, for the demo and a learned Align too."""
    from symalign.runs.durations import align_typical, demo_typical, family_of_ref, simplex_typical

    assert family_of_ref("zoo:gpt-shakespeare/1") == "gpt-shakespeare" and family_of_ref("/my/model") is None
    vit, said = demo_typical("vit-digits", 600)
    assert "vit-digits" in said
    gpt, said = demo_typical("gpt-shakespeare", 600)  # minutes: the sentence says what takes them
    assert gpt > vit and "600 steps" in said and "gpt-shakespeare" in said
    assert demo_typical("vit-digits", 60)[0] < vit / 2
    learned, said = align_typical("learned", None, 600, with_vanilla=True)
    assert learned > align_typical("learned", None, 600)[0] and "zoo-sized model" in said
    assert align_typical("weight", "vit-digits", 600)[0] < learned
    assert simplex_typical(("none",), 600, "gpt-shakespeare")[0] > simplex_typical(("none",), 600)[0]


def test_an_align_estimate_from_history_scales_the_last_learned_run_and_adds_the_vanilla(tmp_path):
    from symalign.runs.durations import align_estimate

    store = RunStore(tmp_path / "runs.sqlite")
    pair = ("zoo:vit-digits/0", "zoo:vit-digits/1")
    assert align_estimate(store, "learned", *pair, 600) is None
    run = store.start("align", *pair, "learned", settings={"config": {"steps": 300}})
    store.finish(run, {"barrier": 0.1})
    vanilla = store.start("barrier", *pair, "none")
    store.finish(vanilla, {"barrier": 1.0})
    learned = store.get(run).finished - store.get(run).created
    assert align_estimate(store, "learned", *pair, 600) == pytest.approx(2 * learned)
    plus = store.get(vanilla).finished - store.get(vanilla).created
    assert align_estimate(store, "learned", *pair, 600, with_vanilla=True) == pytest.approx(2 * learned + plus)


def test_the_lambda_panel_finds_a_grids_vanilla_cell_as_the_unaligned_twin(tmp_path):
    """Issue #70: "no measured curve for this path" for a pair whose vanilla run a grid had just recorded
    (an align run with method none, not a barrier run). Same split and λ grid preferred; else any; none:
    it says what it looked for."""
    from symalign.runs import RunStore
    from symalign.runs.unaligned import looked_for, vanilla_twin

    store = RunStore(tmp_path / "runs.sqlite")

    def run(kind, method, b="zoo:vit-digits/1", points=3, split="eval"):
        lambdas = [i / (points - 1) for i in range(points)]
        run_id = store.start(kind, "zoo:vit-digits/0", b, method, settings={"split": split})
        store.finish(run_id, {"curve": {"lambdas": lambdas, "loss": [0.1] * points}})
        return run_id

    aligned = store.get(run("align", "weight"))
    assert vanilla_twin(aligned, store.list()) is None
    assert "symalign barrier zoo:vit-digits/0 zoo:vit-digits/1" in looked_for(aligned)
    run("align", "none", b="zoo:vit-digits/2")  # another pair: never its twin
    other_grid = run("align", "none", points=5)  # the same pair on another λ grid
    assert vanilla_twin(aligned, store.list()).id == other_grid  # found, whatever its settings
    cell = run("align", "none")  # a grid's vanilla cell on the same grid
    run("barrier", "none", split="train")  # newer, but on the training split
    assert vanilla_twin(aligned, store.list()).id == cell


def test_estimates_scale_with_how_busy_the_machine_is_now(tmp_path, monkeypatch):
    """Issue #70: estimates assumed an idle machine. The probe's reference is the fastest it has run here; a
    slower probe now scales the figure, and the page says both numbers and why."""
    from symalign.runs import load
    from symalign.runs.durations import estimate_text

    times = iter([0.010, 0.030, 0.012])  # idle, then three times slower, then nearly idle
    monkeypatch.setattr(load, "probe_seconds", lambda: next(times))
    idle = load.current_load(tmp_path)
    assert idle.factor == 1.0 and not idle.busy
    busy = load.current_load(tmp_path)
    assert busy.factor == pytest.approx(3.0) and busy.busy and busy.reference == 0.010
    said = estimate_text(40.0, "about 40 s", busy, 40.0)
    assert said.startswith("about 2.0 min on this machine now; 40 s here last time") and "3.0× slower" in said
    assert estimate_text(None, "about 40 s", busy, 40.0).startswith("about 2.0 min on this machine now, typically")
    assert estimate_text(40.0, "about 40 s", load.current_load(tmp_path)) == "40 s here last time"  # 1.2×: not busy


def test_every_paper_table_has_a_time_to_quote_before_its_first_run():
    """Issue #109: "Run it on the zoo" gave no estimate before the click. Every registered runner has a
    measured figure, scaled up on a costlier family."""
    from symalign.runs.durations import FAMILY_COST, PAPER_TYPICAL, paper_typical
    from symalign.sweeps.paper_tables import FAMILIES, RUNNERS

    assert set(PAPER_TYPICAL) == set(RUNNERS)
    for key, families in FAMILIES.items():
        assert PAPER_TYPICAL[key][0] == families[0]  # measured on the family the page offers first
        seconds, said = paper_typical(key, families[0])
        assert seconds == PAPER_TYPICAL[key][1] and families[0] in said
    slow, _ = paper_typical("theus-table1", "gpt-shakespeare")
    assert slow == PAPER_TYPICAL["theus-table1"][1] * FAMILY_COST["gpt-shakespeare"][0]
