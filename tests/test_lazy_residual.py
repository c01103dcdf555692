"""MLP tensors that an orthogonal residual's rotations reach only when their MLP next reads them
(symalign.match.weight.lagging). The lagging groups must give what the transform applied to B from scratch
gives: the residual's correlation and the distance at every step, each MLP's correlation when it reads, and
B once brought up to date."""

from __future__ import annotations

import pytest
import torch
from from_scratch import FromScratch

from symalign.match.config import preset_classes
from symalign.match.weight.running import RunningModel
from symalign.models import canonicalize, spec_of
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.groups import Permutation
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import Transform


def pair(family: str = "gpt2"):
    a = canonicalize(random_model(tiny_config(family, tied=False), seed=0))
    b = canonicalize(random_model(tiny_config(family, tied=False), seed=1))
    return a, b


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_lagging_groups_give_what_the_transform_from_scratch_gives(family):
    a, b = pair(family)
    spec, classes = spec_of(a), preset_classes("all")
    lagging = RunningModel(a.tensors, b.tensors, spec, classes)
    truth = FromScratch(a, b, spec)
    assert lagging.lazy is not None
    grouped = set(lagging.lazy.member)
    assert grouped and all(".mlp." in n for n in grouped), sorted(grouped)
    mlps = sorted(s for s, sp in spec.spaces.items() if sp.kind == "mlp")
    transform = Transform()
    for seed in range(4):  # residual steps between MLP permutations, as a sweep and its inner passes take them
        step = random_transform(spec, {"residual": "orthogonal"}, seed=seed)["residual"]
        lagging.act({"residual": step})
        transform["residual"] = step if "residual" not in transform else step.compose(transform["residual"])
        assert torch.allclose(lagging.correlation("residual", transform["residual"]),
                              truth.correlation(transform, "residual"), atol=1e-10, rtol=0)
        assert lagging.distance(transform) == pytest.approx(truth.distance(transform), abs=1e-12)
        if seed % 2 == 0:  # the groups lag: their stored tensors have not been rotated
            moved = truth.moved(transform)
            assert not any(torch.allclose(lagging.b[n], moved[n]) for n in grouped)
        mlp = mlps[seed % len(mlps)]
        assert torch.allclose(lagging.correlation(mlp, None), truth.correlation(transform, mlp), atol=1e-10, rtol=0)
        perm = random_transform(spec, {"mlp": "perm"}, seed=10 + seed)[mlp]
        if seed % 2:  # two units swapped: ΔK from the moved columns only (a random perm moves most: all columns)
            swap = torch.arange(spec.spaces[mlp].size)
            swap[[0, 1]] = swap[[1, 0]]
            perm = Permutation(swap)
        lagging.act({mlp: perm})
        transform[mlp] = perm if mlp not in transform else perm.compose(transform[mlp])
        assert lagging.distance(transform) == pytest.approx(truth.distance(transform), abs=1e-12)
    lagging.bring_up_to_date()
    moved = truth.moved(transform)
    assert max(float((lagging.b[n] - moved[n]).abs().max()) for n in lagging.b) < 1e-12


def test_a_lagging_group_that_forgets_a_permutation_is_caught(monkeypatch):
    """The check above can fail: a group whose permutation does not reach its share of S differs."""
    a, b = pair()
    spec, classes = spec_of(a), preset_classes("all")
    lagging = RunningModel(a.tensors, b.tensors, spec, classes)
    monkeypatch.setattr(lagging.lazy, "rewritten", lambda *args, **kwargs: None)
    perm = random_transform(spec, {"mlp": "perm"}, seed=3)["layer.0.mlp"]
    lagging.act({"layer.0.mlp": perm})
    truth = FromScratch(a, b, spec).correlation(Transform({"layer.0.mlp": perm}), "residual")
    assert not torch.allclose(lagging.correlation("residual", None), truth, atol=1e-6)


def test_a_whole_transform_at_once_reaches_lagging_groups_as_it_reaches_moved_ones():
    """act() with the residual beside other spaces (a run's `init`): the others first, then the residual."""
    a, b = pair()
    spec, classes = spec_of(a), preset_classes("all")
    lagging = RunningModel(a.tensors, b.tensors, spec, classes)
    truth = FromScratch(a, b, spec)
    transform = random_transform(spec, {"mlp": "perm", "heads": "perm", "residual": "orthogonal"}, seed=5)
    lagging.act(dict(transform))
    assert lagging.distance(transform) == pytest.approx(truth.distance(transform), abs=1e-12)
    assert torch.allclose(lagging.correlation("residual", transform["residual"]),
                          truth.correlation(transform, "residual"), atol=1e-10, rtol=0)
    lagging.bring_up_to_date()
    moved = truth.moved(transform)
    assert max(float((lagging.b[n] - moved[n]).abs().max()) for n in lagging.b) < 1e-12
