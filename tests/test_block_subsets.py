"""Matching only some blocks (`--layers`, issue #41): the other blocks of aligned B stay exactly B's
canonical form, B's function is kept, a preset drops the residual map (it would move every block),
asking for one with a block subset is refused in one line, and so is a block the model lacks."""

from __future__ import annotations

import json

import pytest
import torch

from symalign.cli import main
from symalign.match.layers import block_count, frozen_spaces
from symalign.models import canonicalize, load_model, spec_of


def touched_by(spec, spaces) -> set[str]:
    return {name for space in spaces for name, _, _ in spec.axes_of(space)}


@pytest.mark.parametrize("recipe, layers, method", [("gpt-shakespeare", "0", "weight"), ("vit-digits", "1:", "weight"),
                                                    ("vit-digits", "-1", "learned"),
                                                    ("vit-digits", "mlp=0-1; heads=-1; qk=2", "weight")])
def test_other_blocks_stay_b_canonical_and_the_function_is_kept(recipe, layers, method, tmp_path, capsys):
    a_ref, b_ref, out = f"zoo:{recipe}/0", f"zoo:{recipe}/1", tmp_path / "aligned"
    extra = ["--data", "digits", "--steps", "20"] if method == "learned" else []
    assert main(["align", a_ref, b_ref, "--method", method, "--classes", "all", "--layers", layers, "--out", str(out),
                 "--json", "--no-record", *extra]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["classes"]["residual"] == "none"  # the preset's residual map dropped
    assert summary["function_gap_vs_b"] < 1e-5
    b = canonicalize(load_model(b_ref))
    spec = spec_of(b)
    frozen = frozen_spaces(spec, layers)
    kept = set(spec.spaces) - frozen - {"residual"}
    assert frozen and kept and block_count(spec) >= 2
    aligned = load_model(str(out))
    moved = touched_by(spec, kept)
    for name, tensor in b.tensors.items():
        if name not in moved:  # another block's tensor, or one no kept space touches: as B had it
            assert torch.allclose(aligned.tensors[name], tensor, atol=1e-6), name
    assert any(not torch.allclose(aligned.tensors[n], b.tensors[n], atol=1e-4) for n in moved)  # it did match


def test_a_residual_map_with_a_block_subset_and_a_missing_block_are_refused(tmp_path, capsys):
    pair = ["zoo:vit-digits/0", "zoo:vit-digits/1"]
    assert main(["align", *pair, "--residual", "orthogonal", "--layers", "0", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "residual stream is one basis for every block" in err and "\n" not in err
    assert main(["align", *pair, "--layers", "9", "--out", str(tmp_path / "y")]) == 2
    assert "block 9 does not exist (the model has 4 blocks" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_blocks_per_component_kind():
    """`KIND=BLOCKS` entries restrict one kind each; kinds not named keep every block (or the bare
    entry's blocks); a residual entry, an unknown kind or a kind given twice is one line."""
    from symalign.errors import SymalignError

    spec = spec_of(canonicalize(load_model("zoo:vit-digits/0")))
    n = block_count(spec)
    frozen = frozen_spaces(spec, "mlp=0;heads=-1")
    for name, space in spec.spaces.items():
        if not name.startswith("layer."):
            continue
        block = int(name.split(".")[1])
        expected = {"mlp": block != 0, "heads": block != n - 1}.get(space.kind, False)
        assert (name in frozen) == expected, name
    bare = frozen_spaces(spec, "1; vo=0")  # every kind block 1, except VO maps: block 0
    assert all((name in bare) == (int(name.split(".")[1]) != (0 if s.kind == "vo" else 1))
               for name, s in spec.spaces.items() if name.startswith("layer."))
    for text, words in [("residual=0", "not a per-block component"), ("attn=0", "not a per-block component"),
                        ("mlp=0;mlp=1", "mlp is given blocks twice"), ("mlp=7", "block 7 does not exist")]:
        with pytest.raises(SymalignError, match=words):
            frozen_spaces(spec, text)


@pytest.mark.slow
def test_the_align_page_takes_block_ranges_per_component(tmp_path, monkeypatch):
    """The Align page's grid has a blocks column: the ranges typed there are the run's `layers`
    (KIND=BLOCKS), the preset's residual map is left out, and the other blocks stay B's."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from symalign.runs import RunStore

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app_pages" / "align.py"), default_timeout=120).run()
    at.selectbox(key="align-a").set_value("zoo:vit-digits/0")
    at.selectbox(key="align-b").set_value("zoo:vit-digits/1").run()
    at.button(key="preset:all").click().run()
    at.text_input(key="blocks:mlp").set_value("0").run()
    at.text_input(key="blocks:heads").set_value("-1").run()
    assert any("residual map would move every block" in c.value for c in at.caption)
    at.number_input(key="align-max-examples").set_value(64)
    at.checkbox(key="align-vanilla").uncheck()
    at.checkbox(key="align-background").uncheck()  # in this script run (the default is a job)
    at.button(key="align-go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (run,) = RunStore(tmp_path / "home" / "runs.sqlite").list(kind="align")
    config = run.settings["config"]
    assert config["layers"] == "mlp=0;heads=-1" and config["classes"]["residual"] == "none"
    b = canonicalize(load_model("zoo:vit-digits/1"))
    aligned = load_model(run.artifacts)
    assert torch.allclose(aligned.tensors["layer.1.mlp.fc.weight"], b.tensors["layer.1.mlp.fc.weight"], atol=1e-6)
    assert not torch.allclose(aligned.tensors["layer.0.mlp.fc.weight"], b.tensors["layer.0.mlp.fc.weight"], atol=1e-3)
