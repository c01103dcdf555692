"""Weight matching in float32 (issue #58): the cost matmuls and steps in float32, the correlations'
sums, solves and distances in float64, find what float64 finds on trained zoo pairs."""

from __future__ import annotations

import json

import pytest
import torch

from symalign.cli import main
from symalign.match.align import boundary_tensors
from symalign.match.config import CLASS_PRESETS
from symalign.match.weight import compute_dtype, weight_match
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models import canonicalize, load_model, spec_of
from symalign.symmetry.groups import Permutation
from symalign.symmetry.transform import load_transforms

ALL = CLASS_PRESETS["all"]


@pytest.mark.parametrize("family", ["vit-digits", "gpt-shakespeare"])
def test_float32_costs_find_the_float64_matching_on_the_zoo(family):
    a, b = (canonicalize(load_model(f"zoo:{family}/{i}")) for i in (0, 1))
    spec = spec_of(a)
    runs = {p: weight_match(a.tensors, b.tensors, spec, ALL, boundary_tensors(a), max_sweeps=6, precision=p)
            for p in ("float64", "float32")}
    (t64, h64), (t32, h32) = runs["float64"], runs["float32"]
    assert len(h32) == len(h64)
    assert [h.distance for h in h32] == pytest.approx([h.distance for h in h64], rel=1e-5)
    assert h32[-1].distance < h32[0].distance  # it did match something
    for name, element in t64.items():
        if isinstance(element, Permutation):
            assert torch.equal(t32[name].perm, element.perm), name
        else:
            assert (t32[name].dense() - element.dense()).abs().max() < 1e-4, name


def test_the_default_precision_is_float32_only_at_real_scale():
    assert compute_dtype(None, LARGE_MODEL_PARAMETERS) == torch.float64
    assert compute_dtype(None, LARGE_MODEL_PARAMETERS + 1) == torch.float32
    assert compute_dtype("float64", 10**9) == torch.float64


def test_precision_and_min_improvement_reach_the_run_from_the_command_line(tmp_path):
    """The flags are the option declarations': a run at --precision float32 writes a transform close
    to float64's, and a loose --min-improvement stops sooner than the default."""
    outs = {}
    for name, flags in {"f64": ["--precision", "float64"], "f32": ["--precision", "float32"],
                        "loose": ["--min-improvement", "0.5"]}.items():
        outs[name] = tmp_path / name
        assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/2", "--method", "weight", "--classes", "all",
                     "--out", str(outs[name]), *flags]) == 0
    t64, t32 = (load_transforms(outs[n] / "transforms.safetensors")[0] for n in ("f64", "f32"))
    assert set(t64) == set(t32)
    for name in t64:
        assert (t64[name].dense() - t32[name].dense()).abs().max() < 1e-4, name
    sweeps = {n: json.loads((outs[n] / "alignment.json").read_text())["sweeps"] for n in outs}
    assert json.loads((outs["f32"] / "alignment.json").read_text())["config"]["options"]["precision"] == "float32"
    assert len(sweeps["loose"]) < len(sweeps["f64"])
    assert "below 0.5" in sweeps["loose"][-1]["stopped"]
