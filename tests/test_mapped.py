"""Weight matching's bookkeeping of B: tensors folded into fixed correlations (token embeddings,
an untied LM head) give the same correlations, distances and matches as transforming them."""

from __future__ import annotations

import pytest

from symalign.match.align import align, boundary_tensors
from symalign.match.config import AlignConfig
from symalign.match.solvers import correlation
from symalign.match.weight import running as mapped_module
from symalign.match.weight.descent import distance, weight_match
from symalign.match.weight.running import RunningModel
from symalign.models import canonicalize, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import apply_unchecked

FULL = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}
RESIDUAL_PERM = dict(FULL, residual="perm")


def wide_vocabulary(seed: int):
    """Vocabulary ≫ width, untied: wte and lm_head are larger than the residual's correlation."""
    return canonicalize(random_model(tiny_config("gpt2", layers=2, width=16, heads=4, vocab=300, tied=False),
                                     seed=seed))


@pytest.mark.parametrize("classes", [FULL, RESIDUAL_PERM], ids=["orthogonal", "perm"])
def test_folded_tensors_give_the_correlations_and_distance_of_transformed_ones(classes):
    a, b = wide_vocabulary(0), wide_vocabulary(1)
    spec = spec_of(a)
    mapped = RunningModel(a.tensors, b.tensors, spec, classes)
    assert {"embed.token", "head.weight"} <= set(mapped.static), sorted(mapped.static)
    transform = random_transform(spec, classes, seed=3)
    mapped.act(dict(transform))
    moved = apply_unchecked(b.tensors, spec, transform)  # float32, like B: agreement to float32 round-off
    assert mapped.distance(transform) == pytest.approx(distance(a.tensors, moved), rel=1e-6)
    expected = correlation(a.tensors, moved, spec, "residual")
    got = mapped.correlation("residual", transform["residual"])
    assert (got - expected).abs().max() < 1e-6 * expected.abs().max()


@pytest.mark.parametrize("classes", [FULL, RESIDUAL_PERM], ids=["orthogonal", "perm"])
def test_folding_does_not_change_what_weight_matching_finds(classes, monkeypatch):
    a, b = wide_vocabulary(0), wide_vocabulary(1)
    spec, boundary = spec_of(a), boundary_tensors(a)
    folded, folded_history = weight_match(a.tensors, b.tensors, spec, classes, boundary, max_sweeps=4)
    monkeypatch.setattr(mapped_module, "FOLD_RATIO", 10**12)
    assert not RunningModel(a.tensors, b.tensors, spec, classes).static
    plain, plain_history = weight_match(a.tensors, b.tensors, spec, classes, boundary, max_sweeps=4)
    assert [h.distance for h in folded_history] == pytest.approx([h.distance for h in plain_history], rel=1e-9)
    for name, element in plain.items():
        assert (folded[name].dense() - element.dense()).abs().max() < 1e-8, name


@pytest.mark.parametrize("classes", [FULL, RESIDUAL_PERM], ids=["orthogonal", "perm"])
def test_a_planted_transform_is_recovered_with_folded_embeddings(classes):
    a = wide_vocabulary(0)
    b = transformed(a, random_transform(spec_of(a), classes, seed=5))
    assert distance(a.tensors, b.tensors) > 0.3
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert distance(a.tensors, result.aligned.tensors) < 1e-6
    assert result.report.sweeps[-1].distance < 1e-6
