"""OT fusion, the field's baseline (issue #45): transport plans with the right marginals (exact ones
are permutations), a model fused with itself or with a planted permuted copy is the model again, soft
(Sinkhorn) fusion of two real seeds beats plain averaging, the CLI writes a checkpoint plain
transformers loads, and what OT cannot do is refused in one line before any work."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForImageClassification

from symalign.cli import main
from symalign.match.config import CLASS_PRESETS
from symalign.merge import merge_models
from symalign.merge.ot_fusion import OTSettings, barycentric, plan
from symalign.models import canonicalize, load_model, outputs, random_inputs, spec_of, transformed
from symalign.sweeps.peers import PEERS, peers_cells, peers_summary, peers_text
from symalign.symmetry.random import random_transform
from symalign.symmetry.transform import apply_unchecked


@pytest.fixture(scope="module")
def vit():
    return load_model("zoo:vit-digits/0")


def gap(a, b) -> float:
    x = random_inputs(a, n=8)
    return float((outputs(a, x) - outputs(b, x)).abs().max())


@pytest.mark.parametrize("shape", [(7, 7), (5, 9)])
@pytest.mark.parametrize("solver", ["emd", "sinkhorn"])
def test_plans_have_uniform_marginals_and_exact_square_plans_are_permutations(shape, solver):
    cost = torch.rand(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    t = plan(cost, OTSettings(solver), reg=0.05)
    tol = 1e-9 if solver == "emd" else 1e-6
    assert torch.allclose(t.sum(1), torch.full((shape[0],), 1 / shape[0], dtype=t.dtype), atol=tol)
    assert torch.allclose(t.sum(0), torch.full((shape[1],), 1 / shape[1], dtype=t.dtype), atol=tol)
    m = barycentric(t)
    assert torch.allclose(m.sum(1), torch.ones(shape[0], dtype=m.dtype))  # each A unit a weighted mean of B's
    if solver == "emd" and shape[0] == shape[1]:
        p = shape[0] * t
        assert torch.allclose(p, p.round(), atol=1e-9) and (p.round().sum(0) == 1).all()
    if solver == "sinkhorn":  # entropic plans spread mass: strictly positive everywhere
        assert (t > 0).all()


@pytest.mark.parametrize("how_align", ["ot-acts", "ot-wts"])
def test_fusing_a_model_with_itself_or_a_permuted_copy_returns_the_model(vit, how_align):
    model = canonicalize(vit)
    copy = transformed(model, random_transform(spec_of(model), CLASS_PRESETS["permutations"], seed=5))
    assert gap(model, transformed(model, random_transform(spec_of(model), CLASS_PRESETS["permutations"],
                                                          seed=5))) < 1e-4  # the copy is the same function
    for other in (vit, copy):
        result = merge_models([vit, other], how_align, "average", "digits", max_examples=128)
        assert gap(model, result.merged) < 1e-4, how_align
        assert result.report["merged"]["loss"] == pytest.approx(result.report["inputs"][0]["loss"], abs=1e-5)
        assert result.report["carried"][0]["loss"] == pytest.approx(result.report["inputs"][1]["loss"], abs=1e-5)
        assert result.report["ot"] == {"solver": "emd", "reg": None}
    # unaligned averaging of the permuted copy breaks the function: the test above could fail
    assert gap(model, merge_models([vit, copy], "none", "average", "digits", max_examples=128).merged) > 1.0


@pytest.mark.slow
def test_soft_fusion_of_two_seeds_beats_plain_averaging_and_says_what_it_did_to_b():
    models = [load_model(f"zoo:vit-digits/{i}") for i in (0, 1)]
    plain = merge_models(models, "none", "average", "digits", max_examples=256).report
    for how_align in ("ot-acts", "ot-wts"):
        fused = merge_models(models, how_align, "average", "digits", max_examples=256, ot=OTSettings("sinkhorn")).report
        assert fused["merged"]["loss"] < plain["merged"]["loss"] - 1.0, (how_align, fused["merged"], plain["merged"])
        assert fused["merged"]["accuracy"] > plain["merged"]["accuracy"] + 0.3
        assert fused["ot"]["reg"] == {"ot-acts": 0.08, "ot-wts": 0.06}[how_align]
        # soft plans are not a symmetry: B as carried is a different (worse) function, and the report says so
        assert fused["carried"][0]["loss"] > fused["inputs"][1]["loss"] + 0.5


def test_cli_ot_merge_writes_a_checkpoint_plain_transformers_loads(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "fused"
    assert main(["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "ot-acts", "--ot-solver", "sinkhorn",
                 "--max-examples", "128", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["align"] == "ot-acts" and report["ot"] == {"solver": "sinkhorn", "reg": 0.08}
    assert len(report["carried"]) == 1 and report["merged"]["loss"] < 2.0
    module = AutoModelForImageClassification.from_pretrained(out).eval()
    merged = load_model(out)
    x = random_inputs(merged, n=4)
    with torch.no_grad():
        assert torch.allclose(module(**x).logits, outputs(merged, x), atol=1e-5)
    assert json.loads((out / "merge.json").read_text())["ot"]["solver"] == "sinkhorn"


@pytest.mark.parametrize("argv, message", [
    (["zoo:llama-shakespeare/0", "zoo:llama-shakespeare/1", "--align", "ot-acts"], "grouped-query"),
    (["zoo:pythia-shakespeare/0", "zoo:pythia-shakespeare/1", "--align", "ot-wts"], "rotary"),
    (["zoo:vit-digits/1", "zoo:vit-digits/2", "--base", "zoo:vit-digits/0", "--how", "task_arithmetic",
      "--align", "ot-wts"], "task vectors"),
    (["zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "ot-acts", "--ot-solver", "sinkhorn", "--ot-reg", "-1"],
     "positive"),
])
def test_what_ot_fusion_cannot_do_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    out = tmp_path / "fused"
    assert main(["merge", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_transport_offers_exact_weight_plans_only(capsys):
    """OT-ACTS's plans are soft, so never a transport's; OT-WTS's exact plans are (TransFusion's Table 1)."""
    with pytest.raises(SystemExit):
        main(["transport", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--align", "ot-acts"])
    assert "invalid choice" in capsys.readouterr().err
    assert main(["transport", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--align", "ot-wts",
                 "--head-strategy", "spectral", "--out", "/tmp/unused"]) == 2
    assert "--align ot-wts has none" in capsys.readouterr().err


def test_ot_task_vector_is_the_fine_tunes_step_carried_by_the_planted_permutation(vit):
    """B a permuted copy of A: OT-WTS's exact plans find that permutation, so the transported task vector is
    the fine-tune's step under it (and zero for a fine-tune that did not move)."""
    from symalign.merge.ot_fusion import ot_task_vector

    model = canonicalize(vit)
    planted = random_transform(spec_of(model), CLASS_PRESETS["permutations"], seed=3)
    b = transformed(model, planted)
    generator = torch.Generator().manual_seed(0)
    step = {n: 1e-3 * torch.randn(t.shape, generator=generator) for n, t in model.tensors.items()}
    tuned = model.with_tensors({n: t + step[n] for n, t in model.tensors.items()})
    tau = ot_task_vector(b, vit, tuned)
    moved = canonicalize(tuned).tensors  # the step as the fine-tune's canonical form has it (norms folded, centred)
    expected = apply_unchecked({n: moved[n].double() - t.double() for n, t in model.tensors.items()},
                               spec_of(model), planted)
    assert max(float((tau[n] - expected[n]).abs().max()) for n in expected) < 1e-6
    assert max(float(t.abs().max()) for t in expected.values()) > 1e-4  # a step that moved: the check can fail
    assert max(float(t.abs().max()) for t in ot_task_vector(b, vit, vit).values()) == 0.0


@pytest.mark.slow
def test_peers_table_reports_mean_and_std_over_pairs():
    peers = tuple(p for p in PEERS if p.align in ("none", "weight") or p.solver == "sinkhorn")
    cells = peers_cells("vit-digits", [0, 1, 2], peers=peers, max_examples=128)
    assert len(cells) == 3 * len(peers) and set(cells["method"]) == {p.name for p in peers}
    summary = peers_summary(cells)
    by = summary.set_index("method")
    for name in by.index:  # mean and std are over the three pairs' own numbers
        values = cells[cells["method"] == name]["loss"]
        assert by.loc[name, "loss_mean"] == pytest.approx(values.mean())
        assert by.loc[name, "loss_std"] == pytest.approx(values.std(ddof=1))
    plain = by.loc["average (no alignment)", "loss_mean"]
    assert by.loc["OT-ACTS, Sinkhorn", "loss_mean"] < plain - 1.0
    assert by.loc["weight (all) + average", "loss_mean"] < plain - 0.5
    text = peers_text(summary, cells, markdown=True)
    assert text.count("\n") == len(peers) + 2 and "± " in text


def test_peers_refuses_a_family_the_zoo_lacks(capsys):
    assert main(["sweep", "--preset", "peers", "--family", "no-such-recipe"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-such-recipe" in err


def test_an_exact_plan_at_gpt2_small_mlp_width_is_the_optimal_permutation():
    """POT's default pivot budget stops a 3072² EMD short of optimal (a permutation, but not the best one)."""
    from scipy.optimize import linear_sum_assignment

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(3072, 32, generator=g, dtype=torch.float64), torch.randn(3072, 32, generator=g,
                                                                               dtype=torch.float64)
    cost = torch.cdist(x, y)
    t = plan(cost, OTSettings("emd"), 0.0)
    assert torch.equal((t > 0).sum(0), torch.ones(3072, dtype=torch.long))
    rows, cols = linear_sum_assignment(cost.numpy())
    assert float((t * cost).sum() * 3072) == pytest.approx(float(cost[rows, cols].sum()), rel=1e-9)
