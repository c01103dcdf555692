"""Interpolation and barriers on the shipped zoo: shipped models reproduce their manifest,
barrier(A, A) = 0, a planted symmetry gives a large barrier between identical functions, and
two trained seeds show a clearly positive vanilla barrier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import (
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
)

from symalign.cli import main
from symalign.data import load_data
from symalign.landscape.evaluate import evaluate
from symalign.landscape.interpolation import interpolation_curve
from symalign.models import load_model
from symalign.train.recipes import RECIPES, WIDTH_OF
from symalign.zoo import file_hashes, manifest, zoo_dir

ENTRIES = manifest()["models"]
GPT_EXAMPLES = 32  # keep text curves quick in CI


def test_zoo_holds_each_cpu_recipes_own_seeds_and_is_small():
    """Three seeds of each CPU recipe, two of each width-family member (issue #44); the widest
    GPT-2 of that family (width 256, 6.5 MB a seed) is most of the zoo's growth past 30 MiB."""
    recipes = {(e["recipe"], e["seed"]) for e in ENTRIES}
    assert recipes == {(r, s) for r, recipe in RECIPES.items() if recipe.cpu for s in recipe.seeds}
    assert {r for r, _ in recipes} >= {"vit-digits", "gpt-shakespeare", "vit-digits-flipped", "vit-digits-narrow",
                                       "gpt-shakespeare-upper", "llama-shakespeare", "bert-shakespeare",
                                       "pythia-shakespeare", "bert-shakespeare-genre", *WIDTH_OF}
    size = sum(p.stat().st_size for p in zoo_dir().rglob("*") if p.is_file())
    assert size < 48 * 2**20


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['recipe']}/{e['seed']}")
@pytest.mark.slow
def test_shipped_model_loads_plainly_and_reproduces_its_manifest(entry):
    folder = zoo_dir() / entry["path"]
    assert file_hashes(folder) == entry["files"]
    architecture = json.loads((folder / "config.json").read_text())["architectures"][0]
    auto = (AutoModelForImageClassification if architecture.endswith("ImageClassification")
            else AutoModelForSequenceClassification if architecture.endswith("SequenceClassification")
            else AutoModelForMaskedLM if architecture.endswith("MaskedLM") else AutoModelForCausalLM)
    plain = auto.from_pretrained(str(folder))
    assert sum(p.numel() for p in plain.parameters()) > 5_000  # the narrowest, vit-digits-w16, has 9,466
    metrics = evaluate(load_model(f"zoo:{entry['recipe']}/{entry['seed']}"), load_data(entry["data"]))
    assert metrics.loss == pytest.approx(entry["eval_loss"], rel=1e-4)
    assert metrics.accuracy == pytest.approx(entry["eval_accuracy"], abs=1e-4)


def barrier_json(capsys, *argv) -> dict:
    assert main(["barrier", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_barrier_of_a_model_with_itself_is_zero(capsys):
    out = barrier_json(capsys, "zoo:vit-digits/0", "zoo:vit-digits/0", "--points", 5)
    assert out["lambdas"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert abs(out["barrier"]) < 1e-6 and abs(out["barrier_mean"]) < 1e-6
    assert {"lambdas", "loss", "accuracy", "barrier", "barrier_mean", "endpoint_loss"} <= set(out)


@pytest.mark.parametrize("recipe, extra", [("vit-digits", []), ("gpt-shakespeare", ["--max-examples", GPT_EXAMPLES]),
                                           ("llama-shakespeare", ["--max-examples", GPT_EXAMPLES]),
                                           ("pythia-shakespeare", ["--max-examples", GPT_EXAMPLES])])
@pytest.mark.slow
def test_planted_symmetry_gives_a_large_barrier_between_identical_functions(recipe, extra, tmp_path, capsys):
    assert main(["transform", f"zoo:{recipe}/0", "--random", "--seed", "1", "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    out = barrier_json(capsys, f"zoo:{recipe}/0", tmp_path / "t", *extra)
    la, lb = out["endpoint_loss"]
    assert abs(la - lb) < 1e-4  # same function
    assert out["barrier"] > 1.0, out["loss"]


@pytest.mark.parametrize("recipe, extra, margin", [("vit-digits", [], 1.0), ("gpt-shakespeare", ["--max-examples",
                                                                                                 GPT_EXAMPLES], 0.5),
                                                   ("llama-shakespeare", ["--max-examples", GPT_EXAMPLES], 0.8)])
@pytest.mark.slow
def test_vanilla_barrier_between_seeds_is_clearly_positive(recipe, extra, margin, capsys):
    out = barrier_json(capsys, f"zoo:{recipe}/0", f"zoo:{recipe}/1", *extra)
    assert out["barrier"] > margin and out["barrier_mean"] > margin


def test_curve_endpoints_are_the_endpoint_losses_across_forms(tmp_path, capsys):
    """A raw zoo model against a canonical one (a transform's output): the endpoints are each model's own loss."""
    assert main(["canonicalize", "zoo:vit-digits/1", "--out", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    out = barrier_json(capsys, "zoo:vit-digits/0", tmp_path / "c", "--points", 7, "--max-examples", 100)
    data = load_data("digits")
    own_a = evaluate(load_model("zoo:vit-digits/0"), data, max_examples=100)
    own_b = evaluate(load_model("zoo:vit-digits/1"), data, max_examples=100)
    assert len(out["lambdas"]) == 7 and out["examples"] == 100
    assert out["loss"][0] == out["endpoint_loss"][0] == pytest.approx(own_a.loss, abs=1e-5)
    assert out["loss"][-1] == out["endpoint_loss"][1] == pytest.approx(own_b.loss, abs=1e-5)
    assert out["accuracy"][0] == pytest.approx(own_a.accuracy)


def test_text_curve_respects_max_examples():
    a, b = load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1")
    curve = interpolation_curve(a, b, load_data("shakespeare"), points=3, max_examples=4)
    assert curve.examples == 4 and len(curve.loss) == 3


@pytest.mark.parametrize("argv, message", [
    (["zoo:vit-digits/0", "zoo:gpt-shakespeare/0"], "different architectures"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "--data", "cifar10:/nowhere"], "cifar-10-batches-py"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "--data", "shakespeare"], "text data but the model is a vit"),
    (["zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--data", "digits"], "image data"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "--data", "nonsense"], "unknown data spec"),
    (["zoo:vit-digits/9", "zoo:vit-digits/1"], "the zoo holds"),
])
def test_bad_barrier_input_is_one_line(argv, message, capsys):
    assert main(["barrier", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_align_refuses_a_one_point_curve_before_aligning_and_writes_nothing(tmp_path, capsys, monkeypatch):
    """`align --barrier --points 1`: the curve's error comes first, not after B was aligned, saved and recorded
    (refused while the command line is parsed, in one line)."""
    from symalign.runs import RunStore

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "aligned"
    with pytest.raises(SystemExit) as stop:
        main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--barrier", "--points", "1", "--out", str(out)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "at least 2" in err and err.count("\n") == 1
    assert not out.exists() and RunStore().list() == []


def test_zoo_list_narrows_to_recipes_and_seeds(capsys):
    """`zoo list --recipes NAME` listed every model whatever NAME was (the flag only told `zoo build` what to train)."""
    assert main(["zoo", "list", "--recipes", "vit-digits", "gpt-shakespeare", "--seeds", "0", "2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted((e["recipe"], e["seed"]) for e in listed) == [("gpt-shakespeare", 0), ("gpt-shakespeare", 2),
                                                                 ("vit-digits", 0), ("vit-digits", 2)]
    assert main(["zoo", "list", "--recipes", "vit-digits", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no zoo recipe 'nope'; the zoo holds" in err and err.count("\n") == 1


def test_zoo_list(capsys):
    assert main(["zoo", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == len(ENTRIES) == 27 + 12 and all(Path(zoo_dir() / e["path"]).is_dir() for e in listed)


def test_the_python_api_takes_a_data_spec_and_refuses_what_is_not_data_in_one_line():
    """interpolation_curve(a, b, "digits") was an AttributeError ('str' has no check_model), None the same, a device
    the CLI refuses in one line torch's list of every device type, and points=2.5 a TypeError."""
    from symalign.errors import SymalignError

    a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
    by_spec = interpolation_curve(a, b, "digits", points=3, max_examples=64)
    by_source = interpolation_curve(a, b, load_data("digits"), points=3, max_examples=64)
    assert by_spec.loss == by_source.loss
    for kwargs, message in [({"data": None}, "a data source is needed"),
                            ({"device": "tpu"}, "unknown device 'tpu'; choose auto, cpu, cuda or mps"),
                            ({"points": 2.5}, "--points takes a whole number; got 2.5")]:
        with pytest.raises(SymalignError, match=message):
            interpolation_curve(a, b, **({"data": "digits", "points": 3} | kwargs))
