"""Zhang et al.'s rescaling as an add-on to rotations (issue #45): `orthogonal+rescale` inside heads is a
rotation times a positive scalar per head, admitted where rotations are, found by weight matching as
Procrustes then the best scale (a quartic's root), learned as a rotation and a log-scale, and set
beside the same row without it in the `components` preset."""

from __future__ import annotations

import pytest
import torch

from symalign.errors import InadmissibleError
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.match.solvers import correlation, procrustes, rotation_scale
from symalign.models import canonicalize, load_model, outputs, random_inputs, spec_of, transformed
from symalign.sweeps.grid import preset_grid
from symalign.symmetry.groups import Dense
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import Transform, validate

WITH = {**CLASS_PRESETS["all"], "qk": "orthogonal+rescale", "vo": "orthogonal+rescale"}


@pytest.fixture(scope="module")
def vit():
    return canonicalize(load_model("zoo:vit-digits/0"))


def test_a_planted_rotation_and_scale_keeps_the_function_and_only_the_add_on_recovers_it(vit):
    copy = transformed(vit, random_transform(spec_of(vit), WITH, seed=3))
    x = random_inputs(vit, n=4)
    assert float((outputs(vit, x) - outputs(copy, x)).abs().max()) < 1e-4  # a symmetry: same function
    found = align(vit, copy, AlignConfig(method="weight", classes=WITH)).report.distance_after
    rotations_only = align(vit, copy, AlignConfig(method="weight", classes=CLASS_PRESETS["all"])).report.distance_after
    assert found < 1e-4 < 0.05 < rotations_only, (found, rotations_only)


def test_the_scale_is_the_least_squares_optimum_after_the_rotation(vit):
    other = canonicalize(load_model("zoo:vit-digits/1"))
    spec = spec_of(vit)
    aligned = align(vit, other, AlignConfig(method="weight", classes=CLASS_PRESETS["all"])).aligned
    a, b = vit.tensors, aligned.tensors  # heads and residual matched: the scale question is what is left
    for space in ("layer.0.qk", "layer.2.vo"):
        g = procrustes(correlation(a, b, spec, space))
        s = rotation_scale(a, b, spec, space, g)

        def objective(scale: torch.Tensor, g=g, space=space) -> torch.Tensor:
            m = Dense(scale[:, None, None] * g, "orthogonal+rescale")
            moved = transformed(aligned, Transform({space: m})).tensors
            names = {n for n, _, _ in spec.axes_of(space)}
            return sum(((a[n].double() - moved[n].double()) ** 2).sum() for n in names)

        best = objective(s)
        for factor in (0.9, 0.97, 1.03, 1.1):  # any other scale fits worse
            assert objective(s * factor) > best
        assert not torch.allclose(s, torch.ones_like(s), atol=1e-3)  # a real pair's heads do differ in scale


def test_the_class_is_refused_where_rotations_are_and_checked_when_loaded(vit):
    spec = spec_of(vit)
    with pytest.raises(InadmissibleError, match="within-head"):
        spec.check_classes({"mlp": "orthogonal+rescale"})
    llama = canonicalize(load_model("zoo:llama-shakespeare/0"))
    with pytest.raises(InadmissibleError, match="RoPE"):
        spec_of(llama).check_classes({"qk": "orthogonal+rescale"})
    assert spec_of(llama).fit(WITH)["qk"] == "rotary"  # a preset row falls back as other presets do
    bad = torch.eye(16, dtype=torch.float64).repeat(4, 1, 1)
    bad[:, 0, 0] = 2.0  # not a rotation times a scalar
    with pytest.raises(InadmissibleError, match="rotation times a scalar"):
        validate(Transform({"layer.0.qk": Dense(bad, "orthogonal+rescale")}), spec)


@pytest.mark.slow
def test_learned_matching_keeps_the_class_and_the_function(vit):
    other = load_model("zoo:vit-digits/1")
    result = align(vit, other, AlignConfig(method="learned", classes=WITH, data="digits", steps=5, seed=0))
    validate(result.transform, spec_of(vit))
    assert result.transform["layer.0.qk"].kind == "orthogonal+rescale"
    x = random_inputs(vit, n=4)
    assert float((outputs(canonicalize(other), x) - outputs(result.aligned, x)).abs().max()) < 1e-3


def test_components_preset_sets_the_add_on_beside_the_row_without_it():
    rows = {r.name: r.class_dict for r in preset_grid("components", "vit-digits").rows}
    assert rows["all classes"]["qk"] == "orthogonal"
    assert rows["all classes, QK and VO rotations + rescaling"] == WITH
