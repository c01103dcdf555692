"""Matcher options declared once (issue #41): a declared option is a CLI flag, a checked config value,
a sweep-row key and an Align-page widget; a sweep row's options reach every cell's recorded settings;
`[grid]` crosses values with every row; an undeclared key is refused before anything runs; learned
matching can start from the identity; the papers' one-option ablations are presets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from symalign.cli import build_parser, main
from symalign.errors import SymalignError
from symalign.match.config import AlignConfig
from symalign.match.matchers import Matcher, MatchInputs, MatchOutput, all_options, register, unregister
from symalign.match.options import Option
from symalign.runs import RunStore
from symalign.sweeps.grid import PRESETS, grid_from_dict, preset_grid, read_grid, row_keys
from symalign.sweeps.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
PAIR = ["zoo:vit-digits/0", "zoo:vit-digits/1"]


def capped_weight(inputs: MatchInputs) -> MatchOutput:
    """A plugin matcher: weight matching for at most `cap` sweeps, an option only it declares."""
    from symalign.match.weight.descent import run_weight_matching

    cap = inputs.config.option("cap")
    return run_weight_matching(replace(inputs, config=replace(inputs.config, max_sweeps=cap)))


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    cap = Option("cap", int, 5, "capped-weight: at most this many sweeps", ("capped-weight",), minimum=1)
    register(Matcher("capped-weight", "weight matching with a sweep cap (a test matcher)", capped_weight,
                     options=(cap,)))
    yield
    unregister("capped-weight")


def help_of(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return sub.format_help()


def test_an_option_declared_by_a_plugin_matcher_is_a_flag_a_sweep_key_and_a_widget(plugin, tmp_path, capsys):
    assert "--cap CAP" in help_of("align") and "capped-weight: at most this many sweeps" in help_of("align")
    assert "cap" in row_keys("capped-weight") and "cap" not in row_keys("weight")
    out = tmp_path / "aligned"
    assert main(["align", *PAIR, "--method", "capped-weight", "--classes", "all", "--cap", "1", "--out", str(out),
                 "--json", "--no-record"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["sweeps"] == 1  # the value reached the matcher
    assert main(["align", *PAIR, "--method", "capped-weight", "--cap", "0", "--out", str(out), "--no-record"]) == 2
    assert "--cap must be at least 1" in capsys.readouterr().err  # its declared range, one line
    at = AppTest.from_file(str(ROOT / "app_pages" / "align.py"), default_timeout=120)
    at.run()
    at.selectbox(key="align-a").set_value(PAIR[0])
    at.selectbox(key="align-b").set_value(PAIR[1])
    at.run()
    at.selectbox(key="align-method").set_value("capped-weight")
    at.run()
    assert not at.exception
    widget = next(w for w in at.number_input if w.key.startswith("align-option-capped-weight-cap"))
    widget.set_value(2)
    at.run()
    assert at.session_state["align-config"]["options"] == {"cap": 2}


def test_config_checks_every_declared_option_in_one_line():
    for bad, message in [({"lambdas": "sideways"}, "--lambdas: unknown value 'sideways'"),
                         ({"residual_strategy": "separate"}, "choose from all, first, last, identity"),
                         ({"steps": 0}, "--steps must be at least 1"),
                         ({"options": {"temperature": 2.0}}, "'temperature' is not a plugin matcher's option")]:
        with pytest.raises(SymalignError, match=message):
            AlignConfig(method="learned", data="digits", **bad)
    assert set(all_options()) >= {"lambdas", "steps", "start", "max_sweeps", "head_strategy", "residual_strategy"}


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_a_rows_options_reach_each_cells_recorded_settings(tmp_path):
    path = write(tmp_path, f"""
pairs = [["{PAIR[0]}", "{PAIR[1]}"]]
points = 3
max_examples = 32
[[rows]]
name = "learned, uniform λ"
method = "learned"
classes = "permutations"
lambdas = "uniform"
steps = 20
""")
    store = RunStore(tmp_path / "runs.sqlite")
    result = run_sweep(read_grid(path), executor="serial", store=store)
    assert result.executed == 1 and result.cells["error"].isna().all()
    (run,) = store.list(kind="align")
    assert run.settings["config"]["lambdas"] == "uniform" and run.settings["config"]["steps"] == 20
    assert 1 <= run.metrics["learned_steps"] <= 20


def test_an_undeclared_row_key_ends_the_sweep_before_anything_runs(tmp_path):
    path = write(tmp_path, f"""
pairs = [["{PAIR[0]}", "{PAIR[1]}"]]
[[rows]]
method = "weight"
lambdas = "uniform"
""")
    store = RunStore(tmp_path / "runs.sqlite")
    with pytest.raises(SymalignError) as error:
        run_sweep(read_grid(path), executor="serial", store=store)
    message = str(error.value)
    assert "\n" not in message and "unknown key(s) lambdas" in message and "max_sweeps" in message
    assert store.list() == []


def test_a_grid_table_multiplies_the_cells_by_its_values():
    rows = {"pairs": [PAIR], "rows": [{"method": "weight", "classes": "all"},
                                      {"method": "learned", "classes": "all", "steps": 5}]}
    base = grid_from_dict(rows, "t.toml")
    crossed = grid_from_dict({**rows, "grid": {"max_examples": [32, 64]}}, "t.toml")
    assert len(crossed.cells()) == 2 * len(base.cells())
    lambdas = grid_from_dict({**rows, "grid": {"lambdas": ["half", "uniform"]}}, "t.toml")
    assert len(lambdas.rows) == 3  # only the learned row takes λ
    assert {dict(r.options).get("lambdas") for r in lambdas.rows} == {None, "half", "uniform"}
    with pytest.raises(SymalignError, match="apply to no row"):
        grid_from_dict({**rows, "grid": {"residual_strategy": ["first"]}}, "t.toml")


@pytest.mark.parametrize("preset", ["lambda-sampling", "wm-iterations", "head-strategies", "residual-strategies",
                                    "data-amount", "learned-start", "layer-subsets"])
def test_each_ablation_preset_runs_on_a_two_cell_slice(preset, tmp_path):
    grid = preset_grid(preset, "vit-digits")
    assert len(grid.rows) == len(PRESETS[preset]) >= 2
    varied = [i for i, p in enumerate(PRESETS[preset]) if len(p) > 3][:2]  # two rows that set the option
    grid.rows, grid.pairs, grid.points, grid.max_examples, grid.steps = [grid.rows[i] for i in varied], \
        grid.pairs[:1], 3, 32, 3
    result = run_sweep(grid, executor="serial", store=RunStore(tmp_path / "runs.sqlite"))
    assert result.cells["error"].isna().all(), result.cells["error"].tolist()
    assert len(result.cells) == 2 and result.summary["mean"].notna().all()
    recorded = [r.settings["config"] for r in RunStore(tmp_path / "runs.sqlite").list(kind="align")]
    (name, _), = PRESETS[preset][varied[0]][3].items()
    key = "max_examples" if name == "activation_examples" else name
    assert {c[key] for c in recorded} == {PRESETS[preset][i][3][name] for i in varied}


def test_learned_matching_can_start_from_the_identity():
    from symalign.match.align import align
    from symalign.models import load_model
    from symalign.symmetry.groups import Permutation

    a, b = load_model(PAIR[0]), load_model(PAIR[1])
    result = align(a, b, AlignConfig(method="learned", preset="all", data="digits", start="identity", steps=30))
    start = result.start
    assert start and all(torch_identity(el) for el in start.values())
    assert any(isinstance(el, Permutation) for el in start.values())
    summary = result.report.learned_summary
    assert summary.best_check <= summary.start_check  # learning from B as it is lowers the path
    assert any(not torch_identity(el) for el in result.transform.values())


def torch_identity(element) -> bool:
    import torch

    m = element.dense()
    eye = torch.eye(m.shape[-1], dtype=m.dtype)
    return bool(torch.allclose(m, eye.expand_as(m)))


def test_every_preset_says_what_it_is_for():
    from symalign.sweeps.grid import PRESET_HELP

    assert set(PRESET_HELP) == set(PRESETS) and all(PRESET_HELP.values())


def _other_value(option: Option):
    """A valid value other than the option's default, from its declaration alone."""
    if option.choices:
        return next(c for c in option.choices if c not in (option.default, "ignore"))
    if option.kind is bool:
        return not option.default
    if option.name == "steps":
        return 4  # short: the run below is real
    if option.kind is int:
        return (option.default or 1) + 1
    return (option.default or 0.05) * 2


def test_each_options_default_is_written_once_and_read_by_config_optimiser_and_help(monkeypatch):
    """Issue #71: AlignConfig's and LearnedOptions' fields start from the declarations (a second copy that
    disagrees fails here), and the help says the data's default from symalign.data.defaults."""
    from dataclasses import MISSING, fields

    from symalign.data import defaults
    from symalign.match.learned.optimisation import LearnedOptions

    declared = all_options()
    for cls in (AlignConfig, LearnedOptions):
        for f in fields(cls):
            if f.name in declared and f.default is not MISSING and not declared[f.name].by_data:
                assert f.default == declared[f.name].default, f"{cls.__name__}.{f.name}"
    assert LearnedOptions().steps == defaults.learned_defaults("")["steps"]
    monkeypatch.setitem(defaults.TEXT_LEARNED_DEFAULTS, "steps", 777)  # the one place: help and config follow it
    assert "text 777" in declared["steps"].help_line
    assert AlignConfig(method="learned", data="shakespeare").steps == 777


@pytest.mark.parametrize("method", ["learned", "soft"])
def test_the_value_a_run_records_is_the_value_its_matcher_used(method):
    """Every option a learner declares, set away from its default: the run's recorded settings
    (AlignConfig.to_json, what the run history keeps) and the optimiser's settings as run agree."""
    from symalign.match.align import align
    from symalign.match.matchers import options_of
    from symalign.models import load_model

    chosen = {name: _other_value(o) for name, o in options_of(method).items()}
    config = AlignConfig.from_options(chosen, method=method, data="digits", preset="permutations")
    result = align(load_model(PAIR[0]), load_model(PAIR[1]), config)
    recorded = result.report.config  # what alignment.json and the run history keep
    used = result.report.learned_summary.options  # the optimiser's settings as it ran
    for name, value in chosen.items():
        as_recorded = recorded[name] if name in recorded else recorded["options"][name]
        assert as_recorded == value, name
        assert used[name] == as_recorded, f"{name}: recorded {as_recorded!r}, the matcher used {used[name]!r}"
    unset = AlignConfig(method=method, data="shakespeare")  # the data's defaults: written into the record
    assert unset.to_json()["steps"] == unset.learned_options().steps


def test_each_option_is_declared_beside_a_matcher_that_reads_it():
    """Issue #71: a matcher's options live beside it (weight_options, learned_options, activation_options),
    each read by the matcher it sits beside, and the collection is exactly their union, none twice."""
    from symalign.match.activation.options import ACTIVATION_OPTIONS
    from symalign.match.learned.options import LEARNED_OPTIONS, LEARNERS
    from symalign.match.matchers import BUILTIN_OPTIONS
    from symalign.match.weight.options import WEIGHT_OPTIONS

    for declared, readers in ((WEIGHT_OPTIONS, {"weight"}), (LEARNED_OPTIONS, set(LEARNERS)),
                              (ACTIVATION_OPTIONS, {"activation"})):
        assert declared and all(set(o.methods) <= readers for o in declared)
    names = [o.name for o in BUILTIN_OPTIONS]
    assert len(names) == len(set(names)) == len(WEIGHT_OPTIONS) + len(LEARNED_OPTIONS) + len(ACTIVATION_OPTIONS)
