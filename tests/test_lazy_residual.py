"""Issue #73: MLP tensors that the residual's rotations reach only when their MLP next reads them
(symalign.match.lazy_residual). Lagging must give exactly what moving every tensor gives: the residual's
correlation and the distance at every step, each MLP's correlation when it reads, and B at the end; and a
weight-matching run must take the same steps with it as without."""

from __future__ import annotations

import pytest
import torch

from symalign.match.align import boundary_tensors
from symalign.match.config import preset_classes
from symalign.match.mapped import MappedModel
from symalign.match.weight import weight_match
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
def test_lagging_groups_give_what_moving_every_tensor_gives(family):
    a, b = pair(family)
    spec, classes = spec_of(a), preset_classes("all")
    moving = MappedModel(a.tensors, b.tensors, spec, classes)
    lagging = MappedModel(a.tensors, b.tensors, spec, classes, lazy_residual=True)
    assert lagging.lazy is not None and moving.lazy is None
    grouped = set(lagging.lazy.member)
    assert grouped and all(".mlp." in n for n in grouped), sorted(grouped)
    mlps = sorted(s for s, sp in spec.spaces.items() if sp.kind == "mlp")
    transform = Transform()
    for seed in range(4):  # residual steps between MLP permutations, as a sweep and its inner passes take them
        step = random_transform(spec, {"residual": "orthogonal"}, seed=seed)["residual"]
        for m in (moving, lagging):
            m.act({"residual": step})
        transform["residual"] = step if "residual" not in transform else step.compose(transform["residual"])
        assert torch.allclose(lagging.correlation("residual", transform["residual"]),
                              moving.correlation("residual", transform["residual"]), atol=1e-10, rtol=0)
        assert lagging.distance(transform) == pytest.approx(moving.distance(transform), abs=1e-12)
        if seed % 2 == 0:  # the groups lag: their stored tensors have not been rotated
            assert not any(torch.equal(lagging.b[n], moving.b[n]) for n in grouped)
        mlp = mlps[seed % len(mlps)]
        assert torch.allclose(lagging.correlation(mlp, None), moving.correlation(mlp, None), atol=1e-10, rtol=0)
        perm = random_transform(spec, {"mlp": "perm"}, seed=10 + seed)[mlp]
        if seed % 2:  # two units swapped: ΔK from the moved columns only (a random perm moves most: all columns)
            swap = torch.arange(spec.spaces[mlp].size)
            swap[[0, 1]] = swap[[1, 0]]
            perm = Permutation(swap)
        for m in (moving, lagging):
            m.act({mlp: perm})
        transform[mlp] = perm if mlp not in transform else perm.compose(transform[mlp])
        assert lagging.distance(transform) == pytest.approx(moving.distance(transform), abs=1e-12)
    lagging.bring_up_to_date()
    assert max(float((lagging.b[n] - moving.b[n]).abs().max()) for n in moving.b) < 1e-12


def test_a_lagging_group_that_forgets_a_permutation_is_caught(monkeypatch):
    """The check above can fail: a group whose permutation does not reach its share of S differs."""
    a, b = pair()
    spec, classes = spec_of(a), preset_classes("all")
    moving = MappedModel(a.tensors, b.tensors, spec, classes)
    lagging = MappedModel(a.tensors, b.tensors, spec, classes, lazy_residual=True)
    monkeypatch.setattr(lagging.lazy, "rewritten", lambda *args, **kwargs: None)
    perm = random_transform(spec, {"mlp": "perm"}, seed=3)["layer.0.mlp"]
    for m in (moving, lagging):
        m.act({"layer.0.mlp": perm})
    assert not torch.allclose(lagging.correlation("residual", None), moving.correlation("residual", None), atol=1e-6)


@pytest.mark.parametrize("inner_passes", [0, 10])
def test_weight_matching_takes_the_same_steps_with_lagging_groups(inner_passes):
    a, b = pair()
    spec, classes = spec_of(a), preset_classes("all")
    runs = [weight_match(a.tensors, dict(b.tensors), spec, classes, boundary_tensors(a), max_sweeps=6,
                         inner_passes=inner_passes, lazy_residual=lazy) for lazy in (False, True)]
    (plain, plain_history), (lazy, lazy_history) = runs
    assert [h.distance for h in lazy_history] == pytest.approx([h.distance for h in plain_history], rel=1e-10)
    assert [h.inner_passes for h in lazy_history] == [h.inner_passes for h in plain_history]
    for name, element in plain.items():
        assert (lazy[name].dense() - element.dense()).abs().max() < 1e-8, name


def test_a_whole_transform_at_once_reaches_lagging_groups_as_it_reaches_moved_ones():
    """act() with the residual beside other spaces (a run's `init`): the others first, then the residual."""
    a, b = pair()
    spec, classes = spec_of(a), preset_classes("all")
    moving = MappedModel(a.tensors, b.tensors, spec, classes)
    lagging = MappedModel(a.tensors, b.tensors, spec, classes, lazy_residual=True)
    transform = random_transform(spec, {"mlp": "perm", "heads": "perm", "residual": "orthogonal"}, seed=5)
    for m in (moving, lagging):
        m.act(dict(transform))
    assert lagging.distance(transform) == pytest.approx(moving.distance(transform), abs=1e-12)
    assert torch.allclose(lagging.correlation("residual", transform["residual"]),
                          moving.correlation("residual", transform["residual"]), atol=1e-10, rtol=0)
    lagging.bring_up_to_date()
    assert max(float((lagging.b[n] - moving.b[n]).abs().max()) for n in moving.b) < 1e-12
