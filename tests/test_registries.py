"""A new matcher and a new merge rule are each one file: registered from here, as a plugin module
would register them, they are offered by the command line and the Align and Merge pages and run
end to end, while no other code names them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from symalign.cli import main
from symalign.match.matchers import Matcher, MatchInputs, MatchOutput
from symalign.match.matchers import register as register_matcher
from symalign.match.matchers import unregister as unregister_matcher
from symalign.merge.builtin_rules import MergeInputs, MergeRule
from symalign.merge.builtin_rules import register as register_rule
from symalign.merge.builtin_rules import unregister as unregister_rule

ROOT = Path(__file__).resolve().parents[1]
PAIR = ["zoo:vit-digits/0", "zoo:vit-digits/1"]


def mlp_units_only(inputs: MatchInputs) -> MatchOutput:
    """A test matcher: weight matching restricted to the MLP units."""
    from symalign.match.weight.descent import run_weight_matching

    return run_weight_matching(replace(inputs, classes={k: c for k, c in inputs.classes.items() if k == "mlp"}))


def larger_magnitude(members, inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """A test rule: each weight from the member in which it is largest in magnitude (data-free)."""
    out = {}
    for name in members[0].tensors:
        stacked = torch.stack([m.tensors[name] for m in members])
        out[name] = stacked.gather(0, stacked.abs().argmax(0, keepdim=True))[0]
    return out


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    register_matcher(Matcher("mlp-units", "weight matching of the MLP units alone (a test matcher)", mlp_units_only))
    register_rule(MergeRule("larger-magnitude", "larger magnitude (a test rule)", larger_magnitude))
    yield
    unregister_matcher("mlp-units")
    unregister_rule("larger-magnitude")


def test_a_registered_matcher_is_offered_and_runs(plugins, tmp_path, capsys):
    out = tmp_path / "aligned"
    assert main(["align", *PAIR, "--method", "mlp-units", "--classes", "all", "--out", str(out), "--json",
                 "--no-record"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["method"] == "mlp-units"
    assert summary["distance_after"] < summary["distance_before"] - 0.01  # it matched something
    assert summary["function_gap_vs_b"] < 1e-4
    from symalign.symmetry.transform import Transform

    moved = Transform.load(out / "transforms.safetensors")
    assert moved and all(name.endswith(".mlp") for name in moved)  # MLP units only, as the matcher chose

    at = AppTest.from_file(str(ROOT / "app_pages" / "align.py"), default_timeout=120)
    at.run()
    at.selectbox(key="align-a").set_value(PAIR[0])
    at.selectbox(key="align-b").set_value(PAIR[1])
    at.run()
    assert not at.exception
    assert "mlp-units" in at.selectbox(key="align-method").options
    at.selectbox(key="align-method").set_value("mlp-units").run()
    from symalign.match.matchers import matcher

    assert matcher("mlp-units").help in [c.value for c in at.caption]  # its description beside the box


def test_a_registered_merge_rule_is_offered_and_runs(plugins, tmp_path, capsys):
    from symalign.merge.merging import aligned_members
    from symalign.models import load_model

    out = tmp_path / "merged"
    assert main(["merge", *PAIR, "--align", "weight", "--how", "larger-magnitude", "--max-examples", "32",
                 "--out", str(out), "--json", "--no-record"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["how"] == "larger-magnitude"
    members = aligned_members([load_model(r) for r in PAIR], "weight", None)
    expected = larger_magnitude(members, MergeInputs())
    merged = load_model(str(out))
    assert all(torch.allclose(merged.tensors[k], expected[k], atol=1e-6) for k in expected)
    assert any(not torch.equal(expected[k], members[0].tensors[k]) for k in expected)  # both members contribute

    at = AppTest.from_file(str(ROOT / "app_pages" / "merge.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert "larger magnitude (a test rule)" in at.selectbox(key="merge-how").options


def test_the_builtins_are_what_the_cli_offers_and_unknown_names_are_one_line(capsys):
    from symalign.cli import build_parser
    from symalign.errors import SymalignError
    from symalign.match.config import AlignConfig
    from symalign.match.matchers import method_names
    from symalign.merge.builtin_rules import merge_rules

    assert set(method_names()) >= {"none", "weight", "activation", "learned", "soft"}
    assert set(merge_rules()) >= {"average", "fisher", "regmean"}
    with pytest.raises(SymalignError, match="unknown method 'nope'; choose from none, weight"):
        AlignConfig(method="nope")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["merge", *PAIR, "--how", "nope", "--out", "x"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err
