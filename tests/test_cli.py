"""The command line: inspect and transform work; every user error is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from symalign.cli import main
from symalign.models import load_model, outputs, random_inputs, save_model
from symalign.models.tiny import random_model, tiny_config
from symalign.ui.launch import QUIET_WELCOME


@pytest.fixture
def gpt2_dir(tmp_path):
    return save_model(random_model(tiny_config("gpt2", activation="relu"), seed=1), tmp_path / "gpt2")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_inspect_json_lists_components_and_reasons(gpt2_dir, capsys):
    code, out, _ = run(capsys, "inspect", gpt2_dir, "--json")
    assert code == 0
    spec = json.loads(out)
    residual = next(c for c in spec["components"] if c["name"] == "residual")
    assert residual["admissible"] == ["perm"] and "canonical" in residual["reasons"]["orthogonal"]
    mlp = next(c for c in spec["components"] if c["name"] == "layer.0.mlp")
    assert "scaled_perm" in mlp["admissible"]
    qk = next(c for c in spec["components"] if c["name"] == "layer.1.qk")
    assert qk["count"] == 4 and qk["size"] == 8


def test_transform_plants_same_function_new_weights(gpt2_dir, tmp_path, capsys):
    code, out, err = run(capsys, "transform", gpt2_dir, "--random", "--seed", 4, "--out", tmp_path / "t", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["canonicalised"] and summary["relative_weight_change"] > 0.5
    a, b = load_model(gpt2_dir), load_model(tmp_path / "t")
    x = random_inputs(a, n=3)
    assert (outputs(a, x) - outputs(b, x)).abs().max().item() < 1e-4
    assert (tmp_path / "t" / "transforms.safetensors").is_file()


def test_inadmissible_class_is_one_line(gpt2_dir, tmp_path, capsys):
    code, _, err = run(capsys, "transform", gpt2_dir, "--random", "--classes", "heads=orthogonal", "--out",
                       tmp_path / "x")
    assert code == 2 and err.count("\n") == 1 and "whole units" in err


def _bad_inputs(tmp_path):
    (tmp_path / "nojson").mkdir()
    t5 = tmp_path / "t5"
    t5.mkdir()
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}))
    corrupt = save_model(random_model(tiny_config("vit"), seed=0), tmp_path / "corrupt")
    (corrupt / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}")
    pickled = save_model(random_model(tiny_config("vit"), seed=0), tmp_path / "pickled")
    (pickled / "model.safetensors").unlink()
    torch.save({"x": subprocess.Popen}, pickled / "pytorch_model.bin")  # not a plain tensor checkpoint
    return {
        tmp_path / "missing": "no model at",
        tmp_path / "nojson": "config.json is missing",
        t5: "unsupported architecture 't5'",
        corrupt: "corrupt",
        pickled: "weights_only",
    }


def test_bad_models_give_one_clear_line(tmp_path, capsys):
    for path, message in _bad_inputs(tmp_path).items():
        code, _, err = run(capsys, "inspect", path)
        assert code == 2, path
        assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


# A folder copied by hand, cut short or edited: each JSON file symalign reads from it, damaged. Each was a traceback
# (UnicodeDecodeError, JSONDecodeError, AttributeError at `.get`, a KeyError inside the tokenizers library).
DAMAGED = [
    ("training.json", b"\xff\xfe{", "training.json is not valid JSON (not UTF-8 text)"),
    ("training.json", b"[1]", "training.json holds a JSON list, not the object of keys expected here"),
    ("training.json", b'{"data": 3}', "training.json: its data is 3, not a data spec; name one with --data"),
    ("tokenizer.json", b"garbage", "cannot be loaded (Expecting value"),
    ("tokenizer.json", b'{"model": 3}', "cannot be loaded (no 'added_tokens' entry)"),
    ("tokenizer_config.json", b"\xff", "tokenizer_config.json is not valid JSON (not UTF-8 text)"),
]


@pytest.mark.parametrize("name, content, message", DAMAGED, ids=lambda v: v if isinstance(v, str) else None)
def test_a_damaged_json_file_in_a_model_folder_is_one_line(name, content, message, tmp_path, capsys):
    import shutil

    from symalign.zoo import resolve_zoo

    folder = shutil.copytree(resolve_zoo("zoo:gpt-shakespeare/1"), tmp_path / "model")
    (folder / name).write_bytes(content)
    code, _, err = run(capsys, "barrier", folder, "zoo:gpt-shakespeare/0", "--points", "2", "--max-examples", "4")
    assert code == 2 and message in err and err.count("\n") == 1, err


# A config.json edited by hand, each field at a value transformers accepts but the model cannot be: each was a traceback
# (ZeroDivisionError, torch's "invalid shape dimension", TypeError: unhashable list, KeyError 'classifier.weight') or
# blamed the weights ("look at the above report", a report nobody sees; a KeyError of the activation's name).
BAD_CONFIGS = [
    ({"num_attention_heads": 0}, "its config.json gives 0 heads; a model has at least one"),
    ({"num_attention_heads": -2}, "its config.json gives -2 heads"),
    ({"num_hidden_layers": 0}, "its config.json gives 0 layers"),
    ({"model_type": ["vit"]}, "model_type must be a string and architectures a list of class names"),
    ({"num_labels": -1}, "its config.json builds a model without classifier.weight"),
    ({"hidden_act": "bogus"}, "names the activation 'bogus', which transformers does not know"),
    ({"image_size": 0},
     "of another shape vit.embeddings.position_embeddings (checkpoint [1, 17, 64], config [1, 1, 64])"),
]


@pytest.mark.parametrize("change, message", BAD_CONFIGS, ids=lambda v: next(iter(v)) if isinstance(v, dict) else None)
def test_a_config_the_model_cannot_have_is_one_line(change, message, tmp_path, capsys):
    import shutil

    from symalign.zoo import resolve_zoo

    folder = shutil.copytree(resolve_zoo("zoo:vit-digits/1"), tmp_path / "model")
    config = json.loads((folder / "config.json").read_text()) | change
    (folder / "config.json").write_text(json.dumps(config))
    code, _, err = run(capsys, "inspect", folder)
    assert code == 2 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool, torch.complex64])
def test_weights_stored_as_integers_booleans_or_complex_are_refused(dtype, tmp_path, capsys):
    """transformers casts them to float without a word: booleans became 0 and 1, integers lost their fractions, a
    complex tensor its imaginary part. An integer buffer beside the weights (an old checkpoint's position_ids)
    still loads."""
    import shutil

    from safetensors.torch import load_file, save_file

    from symalign.zoo import resolve_zoo

    source = resolve_zoo("zoo:vit-digits/1")
    stored = load_file(source / "model.safetensors")
    kept = shutil.copytree(source, tmp_path / "buffer")
    save_file({**stored, "vit.embeddings.position_ids": torch.arange(17)[None]}, kept / "model.safetensors")
    assert torch.equal(load_model(kept).tensors["head.weight"], load_model(source).tensors["head.weight"])
    bad = shutil.copytree(source, tmp_path / "bad")
    save_file({k: (v * 100).to(dtype) for k, v in stored.items()}, bad / "model.safetensors")
    code, _, err = run(capsys, "inspect", bad)
    assert code == 2 and "not floating point; a model's weights are floats" in err and err.count("\n") == 1, err


def test_a_damaged_sweep_or_alignment_file_is_one_line(tmp_path, capsys):
    (tmp_path / "grid.toml").write_bytes(b"\xff\xfe\x00rows")
    (tmp_path / "alignment.json").write_text("[1]")
    for argv, message in [(["sweep", tmp_path / "grid.toml"], "grid.toml is not a valid sweep file (not UTF-8 text)"),
                          (["sweep", tmp_path], "is a folder; name the sweep file in it"),
                          (["spectrum", tmp_path], "alignment.json holds a JSON list")]:
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in err and err.count("\n") == 1, err


# Counts below their minimum, per command that takes them. `barrier`, `plane`, `merge` and `attribute` divided a
# loss by 0 examples (a ZeroDivisionError traceback); `merge --how fisher --examples 0` recorded a NaN merge;
# `sweep --points 0` quietly ran 21 points.
BAD_COUNTS = [
    ("barrier", "A", "B", "--max-examples", "0"),
    ("barrier", "A", "B", "--points", "1"),
    ("plane", "A", "B", "C", "--max-examples", "-3"),
    ("simplex", "A", "B", "C", "--max-examples", "0"),
    ("curve", "A", "B", "--max-examples", "0"),
    ("merge", "A", "B", "--out", "M", "--max-examples", "0"),
    ("merge", "A", "B", "--out", "M", "--how", "fisher", "--examples", "0"),
    ("transport", "A", "F", "B", "--out", "M", "--max-examples", "0"),
    ("attribute", "A", "B", "--eval-examples", "0"),
    ("correlations", "A", "B", "--examples", "0"),
    ("sweep", "--preset", "verma-heads", "--points", "0"),
    ("sweep", "--preset", "verma-heads", "--max-examples", "0"),
    ("paper", "zhang-table2", "--run", "--max-examples", "0"),
    ("align", "A", "B", "--out", "M", "--barrier", "--points", "1"),
    ("init", "gpt2", "--out", "M", "--heads", "0"),  # a ZeroDivisionError
    ("init", "gpt2", "--out", "M", "--width", "-4"),  # torch's "negative dimension"
    ("init", "gpt2", "--out", "M", "--layers", "0"),
    ("train", "vit-digits", "--out", "M", "--steps", "-3"),  # wrote a model trained for no steps
]


@pytest.mark.parametrize("argv", BAD_COUNTS, ids=lambda argv: " ".join(argv))
def test_a_count_below_its_minimum_is_refused_while_parsing(argv, capsys, tmp_path, monkeypatch):
    """Refused before any model is read (the model names here do not exist): exit 2, the flag and the minimum named."""
    monkeypatch.chdir(tmp_path)  # where a command that wrongly ran would write M
    flag, value = argv[-2], argv[-1]
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert f"argument {flag}: must be at least" in err and f"got {value}" in err and "Traceback" not in err


def test_align_learns_on_a_s_own_data_when_none_is_named(tmp_path, capsys):
    """`align --method learned` without --data takes A's training data, as align-many, simplex and barrier do;
    a model that records none still gets the one line that asks for --data."""
    code, _, err = run(capsys, "align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "learned", "--steps", "2",
                       "--out", tmp_path / "aligned", "--no-record", "--json")
    assert code == 0, err
    assert json.loads((tmp_path / "aligned" / "alignment.json").read_text())["config"]["data"] == "digits"
    plain = save_model(load_model("zoo:vit-digits/1"), tmp_path / "plain")  # written without its training record
    code, _, err = run(capsys, "align", plain, "zoo:vit-digits/1", "--method", "learned", "--out", tmp_path / "x")
    assert code == 2 and "records no training data; name one with --data" in err and err.count("\n") == 1


@pytest.mark.parametrize("name, message", [
    ("bogus", "unknown device 'bogus'; choose auto, cpu, cuda or mps"),
    ("cuda:1", "run with CUDA_VISIBLE_DEVICES=N and --device cuda"),  # the way to a second GPU, in the same line
])
def test_an_unknown_device_is_one_line(name, message, capsys):
    code, _, err = run(capsys, "barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--device", name, "--points", "2",
                       "--max-examples", "4", "--no-record")
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_an_output_folder_that_would_lose_something_is_refused_before_any_work(tmp_path, capsys):
    """`align A B --out assets/zoo/vit-digits/1` replaced a shipped model with the aligned copy; an --out naming a file
    was a FileExistsError traceback after the alignment was computed; writing into an input's folder replaced it."""
    import hashlib

    from symalign.zoo import zoo_dir

    def fingerprint(folder):
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}

    shipped = zoo_dir() / "vit-digits" / "1"
    before = fingerprint(shipped)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    own = save_model(random_model(tiny_config("gpt2"), seed=3), tmp_path / "own")
    own_before = fingerprint(own)
    cases = [
        (["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", shipped], "is inside the shipped zoo"),
        (["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", shipped.parent / "new"], "inside the shipped zoo"),
        (["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", a_file], "is a file: name a folder"),
        (["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", tmp_path / "x", "--canonical-a", a_file],
         "--canonical-a"),
        (["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", a_file / "sub"], "cannot be created"),
        (["canonicalize", own, "--out", own], "is the folder model"),
        (["transform", own, "--random", "--out", str(own) + "/"], "is the folder model"),
    ]
    for argv, message in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
    from symalign.errors import SymalignError

    with pytest.raises(SymalignError, match="inside the shipped zoo"):  # the Python API's saves as well
        save_model(load_model("zoo:vit-digits/1"), shipped)
    assert fingerprint(shipped) == before and fingerprint(own) == own_before and a_file.read_text() == "keep me"
    assert not (tmp_path / "x").exists() and not (shipped.parent / "new").exists()


def test_an_os_error_is_one_line(tmp_path, monkeypatch, capsys):
    """What the machine refuses while a command writes (here a full disk, stood in) is its own words in one line."""
    import symalign.models

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "m"))

    monkeypatch.setattr(symalign.models, "save_model", full)
    code, _, err = run(capsys, "init", "gpt2", "--out", tmp_path / "m")
    assert code == 2 and err == f"symalign: error: No space left on device: {tmp_path / 'm'}\n"


def test_a_count_that_is_not_an_integer_names_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["barrier", "A", "B", "--max-examples", "all"])
    assert "argument --max-examples: takes an integer; got 'all'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["gpt2", "--width", "30", "--heads", "4"], "--width 30 is not a multiple of --heads 4"),  # was a ValueError
    (["gpt2", "--activation", "bogus"], "--activation 'bogus': choose from"),  # was a KeyError
    (["llama", "--width", "30", "--heads", "6"], "init cannot build this llama: RoPE requires an even rotary"),
])
def test_init_refuses_a_shape_the_family_cannot_take_in_one_line(argv, message, tmp_path, capsys):
    code, _, err = run(capsys, "init", *argv, "--out", tmp_path / "m")
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("argv, message", [
    (["align", "A", "B", "--method", "magic", "--out", "M"], "invalid choice: 'magic'"),
    (["align", "A"], "the following arguments are required: b, --out"),
    (["barrier", "A", "B", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
])
def test_a_wrong_command_line_is_one_line_that_points_at_help(argv, message, capsys):
    """argparse printed the whole usage (26 lines for `align`) above the line that says what was wrong."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and message in err and "--help` lists the" in err


def test_the_python_api_refuses_zero_examples_in_one_line():
    """The same counts through the API, which the CLI's parser does not guard: evaluation and merge statistics."""
    from symalign.data import load_data
    from symalign.errors import SymalignError
    from symalign.landscape.evaluate import Evaluator
    from symalign.merge.merge_rule import MergeInputs

    model = random_model(tiny_config("vit"), seed=0)
    with pytest.raises(SymalignError, match="--max-examples must be at least 1; got 0"):
        Evaluator(model, load_data("digits"), max_examples=0)
    with pytest.raises(SymalignError, match="--examples must be at least 1; got 0"):
        MergeInputs(examples=0)
    assert Evaluator(model, load_data("digits"), max_examples=1).examples == 1


@pytest.mark.slow
def test_console_script_never_shows_a_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "symalign.cli", "inspect", str(tmp_path / "nope")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("symalign: error: no model at") and "Traceback" not in proc.stderr


def test_the_launcher_and_the_config_file_set_the_same_server_options():
    """`symalign app` passes its Streamlit options as flags; `.streamlit/config.toml` holds them for `streamlit run
    app.py` and for AppTest. Every option written in both must say the same, and the garbage collection Streamlit
    runs after each script run stays off in both (a tab following a job cost the server a quarter of a core:
    benchmarks/following_cost.py)."""
    from pathlib import Path

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    from symalign.ui.launch import app_command

    config = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    filed = {f"--{section}.{key}": value for section, options in config.items() for key, value in options.items()}
    command = app_command(headless=True)
    flags = {flag: command[i + 1] for i, flag in enumerate(command) if flag.startswith("--") and "." in flag}
    shared = set(filed) & set(flags)
    assert {"--server.fileWatcherType", "--runner.postScriptGC", "--client.toolbarMode"} <= shared
    for flag in shared:
        value = filed[flag]
        assert flags[flag] == (str(value).lower() if isinstance(value, bool) else str(value)), flag
    assert flags["--runner.postScriptGC"] == "false"


def launched(argv: list[str], monkeypatch) -> tuple[list[str], dict]:
    """The command `symalign app ...` would become and the access policy it hands the server."""
    import symalign.ui.access as access
    import symalign.ui.launch as launch

    seen = {}
    monkeypatch.setattr(os, "execv", lambda path, command: seen.update(command=command))
    monkeypatch.setattr(launch, "check_port_free", lambda address, port: None)  # 10.1.2.3 is no address of ours
    for name in (access.GUEST, access.TRAINING, access.PASSWORD, *QUIET_WELCOME):  # set, removed: restored after
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert main(argv) == 0
    return seen["command"], access.Access.from_environment()


def test_a_taken_port_is_one_line_before_the_app_says_where_it_is(monkeypatch, capsys):
    """Streamlit, given a busy port, logged "Port N is not available" and exited under the launcher's line that named
    N as the app's address. Now the port is probed first, as a server binds it."""
    import socket

    from symalign.errors import SymalignError
    from symalign.ui.launch import check_port_free

    monkeypatch.setattr(os, "execv", lambda path, command: pytest.fail("the server was started"))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert main(["app", "--headless", "--port", str(port)]) == 2
        err = capsys.readouterr().err
        assert f"port {port} on 127.0.0.1 is taken" in err and err.count("\n") == 1 and "the app is at" not in err
    check_port_free("127.0.0.1", port)  # closed: free again at once (a stopped app leaves TIME_WAIT, not a listener)
    with pytest.raises(SymalignError, match="not an address of this machine"):
        check_port_free("nosuchhost.invalid", port)
    with pytest.raises(SystemExit):
        main(["app", "--port", "70000"])
    assert "argument --port: must be at most 65535; got 70000" in capsys.readouterr().err


def test_the_app_listens_on_the_loopback_address_unless_shared(monkeypatch, capsys):
    """Streamlit's default is every interface; a visitor would get the host's files and runs."""
    command, policy = launched(["app", "--headless"], monkeypatch)
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert not policy.guest and policy.password_sha256 is None
    assert "http://127.0.0.1:8501" in capsys.readouterr().err  # said here: Streamlit's welcome is off,
    assert os.environ["STREAMLIT_LOGGER_HIDE_WELCOME_MESSAGE"] == "true"  # its agent-skills popup with it
    launched(["app", "--headless", "--address", "::1"], monkeypatch)
    assert "http://[::1]:8501" in capsys.readouterr().err
    launched(["app", "--headless", "--address", "10.1.2.3"], monkeypatch)  # the host's rights: warned, and its URL
    err = capsys.readouterr().err
    assert "anyone who can reach this machine" in err and "http://10.1.2.3:8501" in err
    command, policy = launched(["app", "--share", "--password", "sesame", "--allow-training"], monkeypatch)
    assert command[command.index("--server.address") + 1] == "0.0.0.0"
    assert command[command.index("--server.maxUploadSize") + 1] == "64"  # guests' per-session cap
    assert command[command.index("--client.toolbarMode") + 1] == "minimal"  # no Deploy button
    assert policy.guest and policy.allow_training and policy.password_ok("sesame") and not policy.password_ok("x")
    assert "sesame" not in str(policy)  # only its hash travels
    assert "http://" in capsys.readouterr().err  # the addresses to give out
    assert main(["app", "--allow-training"]) == 2  # meaningless without --share: one line
    assert "--allow-training is for a shared app" in capsys.readouterr().err
