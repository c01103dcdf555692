"""Streamed weight matching (symalign.match.weight.streamed): the same steps, transform and aligned B as the
in-memory path, read a tensor at a time from the safetensors files; what cannot stream is refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from symalign.errors import SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.weight.streamed import function_check, stream_plan, streamed_weight_match, write_aligned
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, transformed
from symalign.models.io import FAMILIES
from symalign.models.streamed import StreamedCheckpoint, stream_refusal
from symalign.models.tiny import random_model, tiny_config, tiny_families

STREAMABLE = [f for f in tiny_families()
              if stream_refusal(FAMILIES[f], tiny_config(f)) is None and FAMILIES[f].task == "causal-lm"]


def saved_pair(root, family: str, dtype: str = "auto", **options):
    config = tiny_config(family, **options)
    paths = []
    for seed in (0, 1):
        path = root / f"{family}-{seed}"
        model = random_model(config, seed=seed)
        if dtype != "auto":
            model = model.with_tensors(model.tensors)
        save_model(model, path, dtype)
        paths.append(path)
    return paths


def streamed(a, b, config: AlignConfig):
    ca, cb = StreamedCheckpoint(a), StreamedCheckpoint(b)
    config = config.for_spec(cb.spec)
    classes = {k: c for k, c in config.classes.items() if c != "none"}
    return (ca, cb, *streamed_weight_match(ca, cb, config, classes))


def largest_difference(t1, t2) -> float:
    assert set(t1) == set(t2)
    return max((float((t1[k].dense() - t2[k].dense()).abs().max()) for k in t1), default=0.0)


@pytest.mark.parametrize("family", STREAMABLE)
def test_streamed_matching_takes_the_in_memory_steps(tmp_path, family):
    """Every decoder family that streams: the same distances sweep by sweep and the same transform (float64 on a
    small model: to round-off), and the written aligned B is the transform applied to canonical B."""
    a, b = saved_pair(tmp_path, family, layers=3, tied=True)
    config = AlignConfig(method="weight", preset="all", max_sweeps=6)
    in_memory = align(str(a), str(b), config)
    _, cb, transform, sweeps, before = streamed(a, b, config)
    assert [s.distance for s in sweeps] == pytest.approx([s.distance for s in in_memory.report.sweeps], rel=1e-9)
    assert before == pytest.approx(in_memory.report.distance_before, rel=1e-7)  # float32 tensors, summed apart
    assert largest_difference(transform, in_memory.transform) < 1e-9
    out = write_aligned(cb, transform, tmp_path / "aligned")
    written = load_model(out)
    expected = transformed(canonicalize(load_model(b)), transform)
    assert max(float((written.tensors[k] - expected.tensors[k]).abs().max()) for k in expected.tensors) < 1e-6
    inputs = random_inputs(expected)
    assert float((outputs(written, inputs) - outputs(canonicalize(load_model(b)), inputs)).abs().max()) < 1e-4


def test_float32_with_inner_passes_matches_in_memory(tmp_path):
    """The real-scale settings (float32, inner passes with the MLPs held): the same transform to float32's
    round-off, the held tensors' share of the residual kept by the same algebra."""
    a, b = saved_pair(tmp_path, "llama", layers=3, width=64, heads=4, kv_heads=2, mlp=96, vocab=300, tied=True)
    config = AlignConfig(method="weight", preset="all", max_sweeps=8,
                         options={"precision": "float32", "inner_passes": 4})
    in_memory = align(str(a), str(b), config)
    _, _, transform, sweeps, _ = streamed(a, b, config)
    assert any(s.inner_passes for s in sweeps)
    assert [s.distance for s in sweeps] == pytest.approx([s.distance for s in in_memory.report.sweeps], rel=1e-5)
    assert largest_difference(transform, in_memory.transform) < 1e-3


def test_bf16_shards_in_and_out(tmp_path):
    """A bfloat16 checkpoint in several shards streams; aligned B is written in bfloat16 across shards with an
    index, and reads back as the transform applied (to bfloat16's rounding)."""
    a, b = saved_pair(tmp_path, "llama", dtype="bfloat16", layers=4, width=32, tied=False)
    ca, cb, transform, _, _ = streamed(a, b, AlignConfig(method="weight", preset="all", max_sweeps=3))
    out = write_aligned(cb, transform, tmp_path / "aligned", shard_bytes=20_000)
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 2
    written = json.loads((out / "config.json").read_text())
    assert written.get("dtype", written.get("torch_dtype")) == "bfloat16"
    again = StreamedCheckpoint(out)  # the written shards stream in their turn
    expected = transformed(canonicalize(load_model(b)), transform)
    for name in expected.tensors:
        assert torch.allclose(again.raw(name), expected.tensors[name], rtol=1e-2, atol=1e-2), name
    gap, said = function_check(cb, transform)
    assert gap < 1e-4 and "first 2 layers" in said


def test_what_cannot_stream_is_refused_in_one_line(tmp_path):
    a, b = saved_pair(tmp_path, "llama", layers=2, tied=True)
    assert stream_plan(str(a), str(b), "auto") is None  # small: in memory
    assert "streamed" in stream_plan(str(a), str(b), "always")
    assert stream_plan(str(a), str(b), "never") is None
    deeper = saved_pair(tmp_path / "deep", "llama", layers=3, tied=True)[0]
    with pytest.raises(SymalignError, match="differ in their tensors"):
        stream_plan(str(a), str(deeper), "always")
    gpt2 = saved_pair(tmp_path, "gpt2", layers=2)
    with pytest.raises(SymalignError, match="centring every residual writer"):
        stream_plan(str(gpt2[0]), str(gpt2[1]), "always")
    result = subprocess.run([sys.executable, "-m", "symalign.cli", "align", str(gpt2[0]), str(gpt2[1]), "--stream",
                             "always", "--out", str(tmp_path / "x"), "--no-record"], capture_output=True, text=True)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "--stream always" in result.stderr


def test_the_cli_says_it_streamed(tmp_path):
    a, b = saved_pair(tmp_path, "llama", layers=2, tied=True)
    result = subprocess.run([sys.executable, "-m", "symalign.cli", "align", str(a), str(b), "--stream", "always",
                             "--out", str(tmp_path / "out"), "--no-record", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert "streamed from the safetensors files" in summary["streamed"]
    assert summary["function_gap_vs_b"] < 1e-4
    assert (tmp_path / "out" / "transforms.safetensors").is_file()
