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
                                                    ("vit-digits", "-1", "learned")])
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
