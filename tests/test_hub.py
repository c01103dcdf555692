"""Real checkpoints as users hold them, at CI size: hub ids resolved from an offline Hugging Face
cache the test lays out itself (sharded bf16 safetensors, a byte-level BPE tokenizer trained
here), bf16 in and bf16 out, and one line for an absent id, a bad revision or a tokenizer that
does not fit the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM

from research.offline_hub import bpe_tokenizer, put_in_cache, real_config, write_checkpoint
from symalign.cli import main
from symalign.data.text import shakespeare_text
from symalign.models import load_model, outputs, random_inputs

ORG = "test-org"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """HF_HOME with test-org/gpt2-{a,b,c} (GPT-2-small's layout at 2 layers × 64, bf16, sharded,
    BPE tokenizer of 384 tokens) and test-org/gpt2-misfit (a tokenizer larger than its vocabulary)."""
    root = tmp_path_factory.mktemp("hub")
    tokenizer = bpe_tokenizer(shakespeare_text()[:300_000], 384)
    small = dict(n_layer=2, n_embd=64, n_head=4, vocab_size=len(tokenizer), n_positions=128)
    revisions = {}
    for i, name in enumerate("abc"):
        folder = write_checkpoint(real_config("gpt2-small", **small), root / name, seed=i, dtype=torch.bfloat16,
                                  tokenizer=tokenizer, max_shard_size="100KB")
        revisions[name] = put_in_cache(folder, f"{ORG}/gpt2-{name}", root / "hf")
    misfit = write_checkpoint(real_config("gpt2-small", **dict(small, vocab_size=100)), root / "misfit",
                              tokenizer=tokenizer)
    put_in_cache(misfit, f"{ORG}/gpt2-misfit", root / "hf")
    return root, revisions


@pytest.fixture
def offline(hub, monkeypatch):
    root, _ = hub
    monkeypatch.setenv("HF_HOME", str(root / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub


def run_json(argv: list[str], capsys) -> dict:
    assert main(argv + ["--json", "--no-record"]) == 0
    return json.loads(capsys.readouterr().out)


def one_line_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def stored_dtypes(folder: Path) -> set[str]:
    dtypes = set()
    for shard in folder.glob("*.safetensors"):
        if shard.name == "transforms.safetensors":
            continue
        with safe_open(str(shard), framework="pt") as f:
            dtypes |= {f.get_slice(k).get_dtype() for k in f.keys()}
    return dtypes


def test_the_fixture_is_a_sharded_bf16_checkpoint_in_a_hub_cache(hub):
    root, revisions = hub
    snapshot = root / "hf" / "hub" / f"models--{ORG}--gpt2-a" / "snapshots" / revisions["a"]
    assert (snapshot / "model.safetensors.index.json").is_file() and len(list(snapshot.glob("*.safetensors"))) > 1
    assert (root / "hf" / "hub" / f"models--{ORG}--gpt2-a" / "refs" / "main").read_text() == revisions["a"]


def test_a_hub_id_loads_from_the_offline_cache_with_its_storage_precision(offline):
    model = load_model(f"{ORG}/gpt2-a")
    assert model.dtype == torch.bfloat16
    assert all(t.dtype == torch.float32 for t in model.tensors.values())  # computed on in float32
    pinned = load_model(f"{ORG}/gpt2-a@{offline[1]['a']}")
    assert all(torch.equal(model.tensors[k], pinned.tensors[k]) for k in model.tensors)
    plain = AutoModelForCausalLM.from_pretrained(model.source, dtype=torch.float32)
    x = random_inputs(model)
    assert (plain(**x).logits - outputs(model, x)).abs().max() < 1e-5


def test_a_local_directory_of_the_same_name_wins(offline, tmp_path, monkeypatch):
    root, _ = offline
    local = tmp_path / ORG / "gpt2-a"
    local.parent.mkdir()
    local.symlink_to(root / "b", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    assert load_model(f"{ORG}/gpt2-a").source == f"{ORG}/gpt2-a"
    assert torch.equal(load_model(f"{ORG}/gpt2-a").tensors["embed.token"],
                       load_model(str(root / "b")).tensors["embed.token"])


@pytest.mark.slow
def test_align_hub_ids_bf16_in_bf16_out_and_the_same_function(offline, tmp_path, capsys):
    out = tmp_path / "aligned"
    summary = run_json(["align", f"{ORG}/gpt2-a", f"{ORG}/gpt2-b", "--method", "weight", "--classes", "all",
                        "--out", str(out), "--barrier", "--data", "shakespeare"], capsys)
    assert stored_dtypes(out) == {"BF16"}
    plain = AutoModelForCausalLM.from_pretrained(str(out))
    assert plain.dtype == torch.bfloat16
    b, aligned = load_model(f"{ORG}/gpt2-b"), load_model(str(out))
    x = random_inputs(b)
    scale = float(outputs(b, x).abs().max())
    # bf16 keeps 8 bits of mantissa: the re-expressed weights are rounded once more than B's own
    assert float((outputs(aligned, x) - outputs(b, x)).abs().max()) < 0.05 * scale
    assert summary["function_gap_vs_b"] < 1e-4  # before rounding to the export precision
    assert summary["barrier"] >= 0 and summary["stopped"].startswith(("converged", "sweep budget"))
    full = tmp_path / "aligned32"
    run_json(["align", f"{ORG}/gpt2-a", f"{ORG}/gpt2-b", "--out", str(full), "--dtype", "float32"], capsys)
    assert stored_dtypes(full) == {"F32"}


def test_barrier_simplex_and_merge_take_hub_ids(offline, tmp_path, capsys):
    a, b, c = (f"{ORG}/gpt2-{n}" for n in "abc")
    curve = run_json(["barrier", a, f"{b}@main", "--data", "shakespeare", "--points", "3", "--max-examples", "4"],
                     capsys)
    assert len(curve["loss"]) == 3 and all(loss > 0 for loss in curve["loss"])
    surface = run_json(["simplex", a, b, c, "--method", "none", "--resolution", "2", "--max-examples", "4",
                        "--data", "shakespeare"], capsys)
    assert len(surface["loss"]) == 6
    merged = run_json(["merge", a, b, "--align", "weight", "--how", "average", "--data", "shakespeare",
                       "--max-examples", "4", "--out", str(tmp_path / "merged")], capsys)
    assert stored_dtypes(tmp_path / "merged") == {"BF16"} and merged["merged"]["loss"] > 0


def test_a_sweep_file_names_hub_ids(offline, tmp_path, capsys):
    """Sweep files take hub ids like any other model reference; a cell is the command it stands for."""
    a, b = f"{ORG}/gpt2-a", f"{ORG}/gpt2-b@main"
    grid = tmp_path / "grid.toml"
    grid.write_text(f'''name = "hub ids"
pairs = [["{a}", "{b}"]]
points = 3
max_examples = 4
data = "shakespeare"

[[rows]]
name = "vanilla"
method = "none"

[[rows]]
name = "weight"
method = "weight"
classes = "all"
''')
    swept = run_json(["sweep", str(grid), "--executor", "serial", "--out", str(tmp_path / "out")], capsys)
    cells = {c["method"]: c for c in swept["cells"]}
    assert swept["executed"] == 2 and {c["a"] for c in swept["cells"]} == {a}
    curve = run_json(["barrier", a, b, "--data", "shakespeare", "--points", "3", "--max-examples", "4"], capsys)
    assert cells["none"]["barrier"] == pytest.approx(curve["barrier"], abs=1e-6)
    assert cells["weight"]["barrier"] >= 0


def test_missing_ids_bad_revisions_and_misfit_tokenizers_are_one_line(offline, tmp_path, capsys):
    err = one_line_error(["inspect", f"{ORG}/not-there"], capsys)
    assert "no model test-org/not-there" in err and "HF_HUB_OFFLINE" in err
    err = one_line_error(["barrier", f"{ORG}/gpt2-a", f"{ORG}/gpt2-b@v9"], capsys)
    assert "revision 'v9'" in err
    err = one_line_error(["barrier", f"{ORG}/gpt2-misfit", f"{ORG}/gpt2-misfit", "--data", "shakespeare"], capsys)
    assert "tokenizer" in err and "does not belong" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_a_barrier_on_a_terminal_shows_progress_before_its_result(offline):
    """stderr is a pseudo-terminal: the bar (with its phase) is drawn while the curve is computed."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    proc = subprocess.Popen([sys.executable, "-m", "symalign.cli", "barrier", f"{ORG}/gpt2-a", f"{ORG}/gpt2-b",
                             "--data", "shakespeare", "--points", "3", "--max-examples", "8", "--no-record"],
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, seen
    text = seen.decode(errors="replace")
    assert "interpolate" in text and "%" in text and "<" in text  # tqdm: percentage and time left
    assert stdout.decode().startswith("barrier ")


def test_the_app_links_a_hub_id_and_offers_it_with_a_time_estimate(offline, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    pages = Path(__file__).resolve().parents[1] / "app_pages"
    at = AppTest.from_file(str(pages / "models.py"), default_timeout=120).run()
    for name in ("a", "b"):
        at.text_input(key="link-path").set_value(f"{ORG}/gpt2-{name}").run()
        at.button(key="link-go").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    at = AppTest.from_file(str(pages / "align.py"), default_timeout=120).run()
    assert f"hub: {ORG}/gpt2-a" in at.selectbox(key="align-a").options
    at.selectbox(key="align-a").set_value(f"hub: {ORG}/gpt2-a")
    at.selectbox(key="align-b").set_value(f"hub: {ORG}/gpt2-b")
    at.run()
    at.text_input(key=f"align-data:{ORG}/gpt2-a").set_value("shakespeare").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Measuring takes about" in c.value for c in at.caption)
