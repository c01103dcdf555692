"""Barriers on the training split (issue #42, `--split train`): the curve is measured on the data the
pair learned from, deterministically, recorded with its split; a sweep takes `split` per grid or row
and reuses nothing across splits; an unknown split is refused in one line."""

from __future__ import annotations

import json

import pytest

from symalign.cli import main
from symalign.data import load_data
from symalign.data.splits import split_view
from symalign.errors import SymalignError
from symalign.models import load_model
from symalign.runs import RunStore
from symalign.sweeps.grid import grid_from_dict
from symalign.sweeps.sweep import run_sweep

PAIR = ["zoo:vit-digits/0", "zoo:vit-digits/1"]


@pytest.mark.parametrize("spec, ref", [("digits", "zoo:vit-digits/0"), ("shakespeare", "zoo:gpt-shakespeare/0"),
                                       ("shakespeare-mlm", "zoo:bert-shakespeare/0"),
                                       ("shakespeare-genre", "zoo:bert-shakespeare-genre/0")])
def test_the_train_view_evaluates_on_training_data_the_same_way_each_time(spec, ref):
    data, model = load_data(spec), load_model(ref)
    train = split_view(data, "train")
    assert split_view(data, "eval") is data and "train split" in train.name
    first, again = list(train.eval_batches(model, 16)), list(train.eval_batches(model, 16))
    held_out = list(data.eval_batches(model, 16))
    key = "pixel_values" if "pixel_values" in first[0][0] else "input_ids"
    assert all((x[key] == y[key]).all() for (x, _), (y, _) in zip(first, again))  # fixed, not drawn at random
    assert not (first[0][0][key] == held_out[0][0][key]).all()  # other examples than the evaluation split's


def test_a_trained_pair_fits_its_training_split_better_and_the_run_says_which_split(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    curves = {}
    for split in ("eval", "train"):
        assert main(["barrier", *PAIR, "--points", "3", "--split", split, "--json"]) == 0
        curves[split] = json.loads(capsys.readouterr().out)
        assert curves[split]["split"] == split
    # the endpoints saw the training images: lower loss there than on held-out digits
    assert max(curves["train"]["endpoint_loss"]) < min(curves["eval"]["endpoint_loss"])
    runs = RunStore(tmp_path / "home" / "runs.sqlite").list(kind="barrier")
    assert sorted(r.settings["split"] for r in runs) == ["eval", "train"]
    with pytest.raises(SystemExit) as exit_:
        main(["barrier", *PAIR, "--split", "test"])
    assert exit_.value.code == 2 and "invalid choice: 'test'" in capsys.readouterr().err


def test_a_sweep_measures_each_split_and_reuses_only_its_own(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    spec = {"pairs": [PAIR], "rows": [{"method": "none"}], "points": 3, "max_examples": 64,
            "grid": {"split": ["eval", "train"]}}
    result = run_sweep(grid_from_dict(spec, "t.toml"), executor="serial", store=store)
    assert result.executed == 2 and result.cells["barrier"].nunique() == 2
    again = run_sweep(grid_from_dict(spec, "t.toml"), executor="serial", store=store)
    assert again.reused == 2 and again.executed == 0
    with pytest.raises(SymalignError, match="unknown split 'test'"):
        grid_from_dict({**spec, "grid": {}, "split": "test"}, "t.toml")


@pytest.mark.slow
def test_the_simplex_and_align_many_measure_on_the_split_asked_for(tmp_path, capsys, monkeypatch):
    """`--split` on the commands over three models: the surface's corners are the models' own losses
    on that split, and the runs record it."""
    from symalign.landscape.evaluate import evaluate

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    three = [f"zoo:vit-digits/{i}" for i in range(3)]
    surfaces = {}
    for split in ("eval", "train"):
        assert main(["simplex", *three, "--resolution", "1", "--max-examples", "64", "--split", split, "--json"]) == 0
        surfaces[split] = json.loads(capsys.readouterr().out)
    train_loss = evaluate(load_model(three[0]), split_view(load_data("digits"), "train"), max_examples=64).loss
    assert surfaces["train"]["corner_loss"][0] == pytest.approx(train_loss, rel=1e-5)
    assert surfaces["train"]["corner_loss"][0] < surfaces["eval"]["corner_loss"][0]
    from symalign.match.config import AlignConfig
    from symalign.workflows.many import align_many_run

    store = RunStore(tmp_path / "home" / "runs.sqlite")
    many = align_many_run(three, AlignConfig(method="weight", max_sweeps=1), out=tmp_path / "u", measure=True,
                          points=3, max_examples=64, store=store, split="train")
    train_curve = next(c for (i, j), c in many.curves if (i, j) == (0, 1))
    assert train_curve.extra["split"] == "train" and train_curve.loss[0] == pytest.approx(train_loss, rel=1e-5)
    from symalign.cli import build_parser

    assert build_parser().parse_args(["align-many", *three, "--out", "x", "--split", "train"]).split == "train"
    assert sorted(r.settings["split"] for r in store.list(kind="simplex")) == ["eval", "train"]
    assert store.list(kind="align-many")[0].settings["split"] == "train"


@pytest.mark.slow
def test_the_align_page_measures_on_the_split_chosen(tmp_path, monkeypatch):
    """The Align page's 'measure on' choice reaches both of its runs (the alignment's curve and the
    vanilla one), recorded with their split."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    page = Path(__file__).resolve().parents[1] / "app_pages" / "align.py"
    at = AppTest.from_file(str(page), default_timeout=120).run()
    at.radio(key="align-split").set_value("train")
    at.number_input(key="align-max-examples").set_value(64)
    at.number_input(key="align-points").set_value(5)
    at.checkbox(key="align-background").uncheck()  # in this script run (the default is a job)
    at.button(key="align-go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = RunStore(tmp_path / "home" / "runs.sqlite").list()
    assert sorted(r.kind for r in runs) == ["align", "barrier"] and all(r.settings["split"] == "train" for r in runs)


def test_labelled_text_read_as_text_keeps_its_splits_apart():
    """A language model reading labelled sentences: the train view is the training rows, also after the
    evaluation view was read first (the views share a cache)."""
    data, model = load_data("shakespeare-genre"), load_model("zoo:gpt-shakespeare/0")
    held_out = list(data.eval_batches(model, 2))
    trained = list(split_view(data, "train").eval_batches(model, 2))
    assert not (held_out[0][0]["input_ids"] == trained[0][0]["input_ids"]).all()
    again = list(data.eval_batches(model, 2))
    assert (held_out[0][0]["input_ids"] == again[0][0]["input_ids"]).all()
