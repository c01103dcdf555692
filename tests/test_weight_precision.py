"""Weight matching in float32 (issue #58): the cost matmuls and steps in float32, the correlations'
sums (but an MLP's at real scale), solves and distances' sums in float64, find what float64 finds on
trained zoo pairs."""

from __future__ import annotations

import json

import pytest
import torch

from symalign.cli import main
from symalign.match.align import boundary_tensors
from symalign.match.config import CLASS_PRESETS
from symalign.match.weight.descent import compute_dtype, weight_match
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


def test_float32_correlations_and_distances_agree_with_float64_on_mlp_shaped_tensors():
    """The float32 paths (a wide correlation's products summed in place; differences taken before
    widening, issue #73) against float64, on an MLP of 1024 units: within float32's rounding, and
    every tensor counted in the sum."""
    from symalign.match.solvers import WIDE_SUM_ENTRIES, correlation
    from symalign.match.weight.running import squared_distance
    from symalign.symmetry.groups import CO, CONTRA
    from symalign.symmetry.spec import Space, SymmetrySpec, Tag

    g = torch.Generator().manual_seed(0)
    n = 1024
    assert n * n >= WIDE_SUM_ENTRIES  # the summed-in-place path
    shapes = {"fc": ((64, n), 1, CO), "bias": ((n,), 0, CO), "proj": ((n, 64), 0, CONTRA)}
    a = {k: torch.randn(*s, generator=g) for k, (s, _, _) in shapes.items()}
    b = {k: t + 0.1 * torch.randn(t.shape, generator=g) for k, t in a.items()}

    def spec(names):
        tags = {k: tuple(Tag("mlp", v) if i == axis else None for i in range(len(s)))
                for k, (s, axis, v) in shapes.items() if k in names}
        return SymmetrySpec("test", {"mlp": Space("mlp", "mlp", n)}, tags, False)

    wide = correlation({k: t.double() for k, t in a.items()}, b, spec(a), "mlp", dtype=torch.float64)
    narrow = correlation(a, b, spec(a), "mlp", dtype=torch.float32)
    assert narrow.dtype == torch.float64
    assert (narrow - wide).abs().max() < 1e-5 * wide.abs().max()
    without_bias = correlation(a, b, spec(["fc", "proj"]), "mlp", dtype=torch.float32)
    assert (without_bias - wide).abs().max() > 0.5  # the bias's product is in the sum
    for k in a:
        exact = float(((a[k].double() - b[k].double()) ** 2).sum())
        assert squared_distance(a[k], b[k]) == pytest.approx(exact, rel=1e-6)
        assert squared_distance(a[k].double(), b[k].double()) == pytest.approx(exact, rel=1e-12)


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
