"""Issue #73's inner passes: the residual and attention converged between the MLP permutations' solves,
with the MLP tensors held (symalign.match.weight.lagging). Held tensors must give exactly what the transform applied
from scratch gives (correlation, distance, and B once released), and the passes must buy what they are for: far fewer
sweeps on a zoo pair at no worse a distance."""

from __future__ import annotations

import pytest
import torch
from from_scratch import FromScratch

from symalign.match.align import align
from symalign.match.config import AlignConfig, preset_classes
from symalign.match.weight.descent import HELD_KINDS, default_inner_passes
from symalign.match.weight.running import RunningModel
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models import canonicalize, load_model, spec_of
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import Transform


def test_held_tensors_give_what_the_transform_from_scratch_gives():
    a = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=0))
    b = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=1))
    spec, classes = spec_of(a), preset_classes("all")
    holding = RunningModel(a.tensors, b.tensors, spec, classes)
    truth = FromScratch(a, b, spec)
    # what the inner passes hold: every tensor the residual touches that no attention space reads, the norm
    # gains (a diag axis: their share of C is 1·1ᵀ, which D leaves as it is) included; the MLPs' tensors lag
    # behind the residual already (symalign.match.weight.lagging), so the hold takes the rest
    attention = set().union(*(holding.touched(s) for s, sp in spec.spaces.items()
                              if sp.kind not in HELD_KINDS and s != "residual"))
    holding.hold("residual", holding.touched("residual") - attention)
    held = holding.held.names
    assert any(n.endswith("ln2.weight") for n in held), sorted(held)
    total = None
    for seed in range(3):  # three residual steps
        step = random_transform(spec, {"residual": "orthogonal"}, seed=seed)["residual"]
        holding.act({"residual": step})
        total = step if total is None else step.compose(total)
        transform = Transform({"residual": total})
        assert torch.allclose(holding.correlation("residual", total), truth.correlation(transform, "residual"),
                              atol=1e-10, rtol=0)
        assert holding.distance(transform) == pytest.approx(truth.distance(transform), abs=1e-12)
        assert all(torch.equal(holding.b[k], b.tensors[k].double()) for k in held), "held tensors were moved"
    holding.release()
    holding.bring_up_to_date()
    assert holding.held is None
    moved = truth.moved(transform)
    assert max(float((holding.b[k] - moved[k]).abs().max()) for k in holding.b) < 1e-12


def test_a_broken_hold_is_caught():
    """The check above can fail: a hold that drops the held tensors' share of the correlation differs."""
    a = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=0))
    b = canonicalize(random_model(tiny_config("gpt2", tied=False), seed=1))
    spec, classes = spec_of(a), preset_classes("all")
    holding = RunningModel(a.tensors, b.tensors, spec, classes)
    attention = set().union(*(holding.touched(s) for s, sp in spec.spaces.items()
                              if sp.kind not in HELD_KINDS and s != "residual"))
    holding.hold("residual", holding.touched("residual") - attention)
    assert holding.held.names
    holding.held.correlation = lambda: torch.zeros(1, spec.spaces["residual"].size, spec.spaces["residual"].size,
                                                   dtype=torch.float64)
    truth = FromScratch(a, b, spec).correlation(Transform(), "residual")
    assert not torch.allclose(holding.correlation("residual", None), truth, atol=1e-6)


def test_inner_passes_take_a_zoo_pair_to_as_close_a_fit_in_far_fewer_sweeps():
    """gpt-shakespeare 0↔1, all classes, seed 0: plain coordinate descent needs 16 sweeps (docs/benchmarks.md);
    with inner passes the MLPs are solved in at most half as many, at a distance no more than 0.1% higher."""
    a, b = canonicalize(load_model("zoo:gpt-shakespeare/0")), canonicalize(load_model("zoo:gpt-shakespeare/1"))
    runs = {k: align(a, b, AlignConfig.from_options({"inner_passes": k}, method="weight", preset="all"))
            for k in (0, 10)}
    plain, inner = (runs[k].report for k in (0, 10))
    assert not any(s.inner_passes for s in plain.sweeps)
    assert sum(s.inner_passes or 0 for s in inner.sweeps) > 0
    assert inner.sweeps[-1].sweep <= plain.sweeps[-1].sweep / 2, (inner.sweeps[-1].sweep, plain.sweeps[-1].sweep)
    assert inner.distance_after <= plain.distance_after * 1.001


def test_inner_passes_are_on_by_default_at_real_scale_only():
    assert default_inner_passes(LARGE_MODEL_PARAMETERS + 1) > 0
    assert default_inner_passes(LARGE_MODEL_PARAMETERS) == 0
    a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
    report = align(a, b, AlignConfig(method="weight", preset="all")).report
    assert not any(s.inner_passes for s in report.sweeps), "the zoo's published numbers are plain sweeps"


def test_inner_passes_refine_the_maps_inside_heads_and_keep_the_head_pairings(monkeypatch):
    """The passes update the residual and the rotations inside heads; the whole-head pairings, discrete like the
    MLPs' permutations, are re-solved by the sweeps only (their circuit costs were a quarter of a GPT-2-small pass)."""
    from symalign.match.weight import descent as weight

    a = canonicalize(random_model(tiny_config("gpt2"), seed=0))
    b = canonicalize(random_model(tiny_config("gpt2"), seed=1))
    spec, classes = spec_of(a), preset_classes("all")
    inner = weight.inner_units(weight._units(spec, classes), spec)
    kinds = {spec.spaces[s].kind for unit in inner for s in unit}
    assert ("residual",) in inner and {"qk", "vo"} <= kinds, inner
    assert not kinds & {"heads", "mlp"}, inner
    costs = []
    plain_cost = weight.head_cost
    monkeypatch.setattr(weight, "head_cost", lambda *args, **kwargs: costs.append(1) or plain_cost(*args, **kwargs))
    report = align(a, b, AlignConfig.from_options({"inner_passes": 10}, method="weight", preset="all")).report
    sweeps, passes = report.sweeps[-1].sweep, sum(s.inner_passes or 0 for s in report.sweeps)
    layers = sum(1 for sp in spec.spaces.values() if sp.kind == "heads" and sp.batched_by is None)
    assert passes > 0
    assert len(costs) == sweeps * layers, (len(costs), sweeps, passes, layers)
