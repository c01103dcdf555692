"""Merge and transport take every alignment option (issue #55): matching is a plug-in before any fusion
(`--align weight ... --how ot-acts`), `--align none --how ot-acts` is the old `--align ot-acts`,
matching then averaging is `align` then an average, TransFusion's brute-force head cost picks each
head pair's best inner alignment, and transport reports the support set's accuracy per α."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from transformers import AutoModelForImageClassification

from symalign.cli import main
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.weight.units import best_inner_similarity, brute_force_head_cost, inner_correlations
from symalign.merge import merge_models
from symalign.merge.ot_fusion import OTSettings
from symalign.merge.task_vectors import with_head_strategy
from symalign.models import canonicalize, load_model

ZHANG = {"mlp": "perm", "heads": "none", "qk": "orthogonal", "vo": "orthogonal", "residual": "none"}


@pytest.fixture(scope="module")
def pair():
    return load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")


def largest_gap(x: dict, y: dict) -> float:
    return max(float((x[n].double() - y[n].double()).abs().max()) for n in x)


@pytest.mark.parametrize("how", ["ot-acts", "ot-wts"])
def test_ot_as_a_rule_on_unaligned_models_is_the_old_ot_alignment(pair, how):
    ot = OTSettings("sinkhorn")
    old = merge_models(list(pair), how, "average", "digits", max_examples=64, ot=ot)
    new = merge_models(list(pair), "none", how, "digits", max_examples=64, ot=ot)
    assert largest_gap(old.merged.tensors, new.merged.tensors) < 1e-6
    assert new.report["ot"] == {"solver": "sinkhorn", "reg": old.report["ot"]["reg"]}


def test_matching_then_averaging_is_align_then_the_average(pair):
    config = AlignConfig(method="weight", classes=ZHANG, seed=0, device="cpu")
    aligned_b = align(pair[0], pair[1], config).aligned
    a = canonicalize(pair[0]).tensors
    expected = {n: (a[n].double() + aligned_b.tensors[n].double()) / 2 for n in a}
    merged = merge_models(list(pair), "weight", "average", "digits", max_examples=64, alignment=config)
    assert largest_gap(expected, merged.merged.tensors) < 1e-6
    assert merged.report["alignment"]["classes"] == ZHANG
    # the plug-in changes what OT fusion sees: matched first, it is not the unmatched fusion
    fused = merge_models(list(pair), "weight", "ot-acts", "digits", max_examples=64, alignment=config)
    plain = merge_models(list(pair), "none", "ot-acts", "digits", max_examples=64)
    assert largest_gap(fused.merged.tensors, plain.merged.tensors) > 1e-3


def test_merge_cli_takes_classes_and_a_fusion_rule_and_writes_a_loadable_checkpoint(tmp_path, capsys):
    out = tmp_path / "merged"
    main(["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "weight", "--mlp", "perm", "--qk",
          "orthogonal", "--vo", "orthogonal", "--how", "ot-acts", "--max-examples", "64", "--out", str(out),
          "--no-record", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["alignment"]["classes"]["qk"] == "orthogonal" and summary["ot"]["solver"] == "emd"
    record = json.loads((out / "merge.json").read_text())
    assert record["how"] == "ot-acts" and record["alignment"]["classes"]["vo"] == "orthogonal"
    model = AutoModelForImageClassification.from_pretrained(out)
    assert model(pixel_values=torch.zeros(1, 1, 8, 8)).logits.shape[-1] == 10


@pytest.mark.parametrize("argv, says", [
    (["--align", "none", "--qk", "orthogonal"], "--align none takes no --qk"),
    (["--align", "ot-acts", "--how", "ot-wts"], "would transport twice"),
])
def test_merge_refuses_alignment_flags_that_do_not_apply(tmp_path, capsys, argv, says):
    assert main(["merge", "zoo:vit-digits/0", "zoo:vit-digits/1", *argv, "--out", str(tmp_path / "m"),
                 "--no-record"]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def random_heads(h: int, dh: int, d: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p = "layer.0.attn."
    t = {p + f"{n}.weight": torch.randn(h, dh, d, generator=g, dtype=torch.float64) for n in "qkv"}
    t[p + "o.weight"] = torch.randn(d, h, dh, generator=g, dtype=torch.float64)
    return t


def test_brute_force_scores_each_head_pair_by_its_best_inner_alignment():
    a, b = random_heads(3, 4, 6, seed=0), random_heads(3, 4, 6, seed=1)
    qk, vo = inner_correlations(a, b, 0)
    perm_cost = brute_force_head_cost(a, b, 0, "perm")
    for i, j in itertools.product(range(3), range(3)):  # every permutation of a head's 4 units, enumerated
        best = sum(max(float(m[i, j][torch.arange(4), torch.tensor(p)].sum()) for p in itertools.permutations(range(4)))
                   for m in (qk, vo))
        assert float(perm_cost[i, j]) == pytest.approx(best, rel=1e-12)
    rot_cost = brute_force_head_cost(a, b, 0, "orthogonal")
    g = torch.Generator().manual_seed(2)
    for i, j in itertools.product(range(3), range(3)):
        for m in (qk, vo):  # Procrustes' rotation reaches the nuclear norm; no random rotation beats it
            u, _, vh = torch.linalg.svd(m[i, j])
            assert float((m[i, j] * (u @ vh)).sum()) == pytest.approx(float(best_inner_similarity(m[i:i + 1, j:j + 1])),
                                                                      rel=1e-10)
            for _ in range(20):
                r, _ = torch.linalg.qr(torch.randn(4, 4, generator=g, dtype=torch.float64))
                assert float((m[i, j] * r).sum()) <= float(best_inner_similarity(m[i:i + 1, j:j + 1])) + 1e-12
        assert rot_cost[i, j] >= perm_cost[i, j] - 1e-12  # permutations are rotations


def test_brute_force_finds_heads_that_were_shuffled_and_rotated_inside():
    a = random_heads(4, 5, 8, seed=3)
    order, g = [2, 0, 3, 1], torch.Generator().manual_seed(4)
    rot = [torch.linalg.qr(torch.randn(5, 5, generator=g, dtype=torch.float64))[0] for _ in range(4)]
    p = "layer.0.attn."
    b = {p + f"{n}.weight": torch.stack([rot[h] @ a[p + f"{n}.weight"][order[h]] for h in range(4)]) for n in "qkv"}
    b[p + "o.weight"] = torch.stack([a[p + "o.weight"][:, order[h]] @ rot[h].T for h in range(4)], 1)
    cost = brute_force_head_cost(a, b, 0, "orthogonal")
    assert cost.argmax(1).tolist() == [order.index(i) for i in range(4)]


@pytest.mark.parametrize("inside, expected", [("perm", "perm"), ("orthogonal", "orthogonal")])
def test_weight_matching_scores_brute_force_heads_by_the_class_inside_them(pair, monkeypatch, inside, expected):
    """The whole-head step hands brute force the class chosen inside heads (a permutation-only run, as
    TransFusion's Table 3 is, must score head pairs by permutations, not rotations)."""
    import symalign.match.weight.descent as weight

    seen, real = [], weight.head_cost

    def spy(a, b, layer, kind, dtype, inner):
        seen.append(inner)
        return real(a, b, layer, kind, dtype, inner)

    monkeypatch.setattr(weight, "head_cost", spy)
    classes = {"mlp": "perm", "heads": "perm", "qk": inside, "vo": inside, "residual": "none"}
    config = AlignConfig(method="weight", classes=classes, head_cost="brute-force", max_sweeps=1, device="cpu")
    align(pair[0], pair[1], config)
    assert seen and set(seen) == {expected}


def test_head_strategies_set_the_head_cost_or_keep_the_heads_in_order():
    config = AlignConfig(method="weight", preset="all")
    assert with_head_strategy(config, "none").classes["heads"] == "none"
    assert with_head_strategy(config, "brute-force").head_cost == "brute-force"
    assert with_head_strategy(config, "spectral").classes["heads"] == "perm"
    assert config.head_cost == "circuit"  # the original is left alone


@pytest.mark.parametrize("strategy", ["brute-force", "none"])
def test_transport_reports_task_and_support_accuracy_per_alpha(tmp_path, capsys, strategy):
    main(["transport", "zoo:vit-digits/0", "zoo:vit-digits-flipped/0", "zoo:vit-digits/1", "--head-strategy", strategy,
          "--alpha", "0,1", "--max-examples", "128", "--out", str(tmp_path / "t"), "--no-record", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["task_accuracy"]) == len(summary["base_accuracy"]) == 2
    assert summary["head_strategy"] == strategy
    b = load_model("zoo:vit-digits/1")
    from symalign.data import load_data
    from symalign.landscape.evaluate import Evaluator

    own = Evaluator(canonicalize(b), load_data("digits"), 128, torch.device("cpu"))
    assert summary["base_accuracy"][0] == pytest.approx(own(own.hf_params(canonicalize(b))).accuracy)  # α = 0 is B
    assert summary["base_accuracy"][1] != summary["base_accuracy"][0] or summary["task_accuracy"][1] != \
        summary["task_accuracy"][0]
    record = json.loads((tmp_path / "t" / "transport.json").read_text())
    assert record["alignment"]["classes"]["heads"] == ("none" if strategy == "none" else "perm")


def test_transport_refuses_a_head_strategy_without_an_alignment(tmp_path, capsys):
    assert main(["transport", "zoo:vit-digits/0", "zoo:vit-digits-flipped/0", "zoo:vit-digits/1", "--align", "none",
                 "--head-strategy", "spectral", "--out", str(tmp_path / "t"), "--no-record"]) == 2
    assert "--align none has none" in capsys.readouterr().err
    # a few-shot α needs classes: refused in one line before any alignment, for a language model
    assert main(["transport", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare-upper/0", "zoo:gpt-shakespeare/1",
                 "--few-shot", "10", "--out", str(tmp_path / "g"), "--no-record"]) == 2
    assert "a few-shot α needs a classifier's labels" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()
    main(["transport", "zoo:vit-digits/0", "zoo:vit-digits-flipped/0", "zoo:vit-digits/1", "--align", "none",
          "--alpha", "0,1", "--few-shot", "2", "--max-examples", "64", "--out", str(tmp_path / "v"), "--no-record",
          "--json"])
    said = json.loads(capsys.readouterr().out)
    assert said["few_shot"]["shots"] == 2 and "layer.0" in said["layer_alphas"] and "head" in said["layer_alphas"]
    assert 0 <= said["few_shot"]["task_accuracy"] <= 1
    # TransFusion's residual per block needs a matcher's alignment to follow; with one it is recorded
    assert main(["transport", "zoo:vit-digits/0", "zoo:vit-digits-flipped/0", "zoo:vit-digits/1", "--align", "none",
                 "--residual-per-block", "--out", str(tmp_path / "p"), "--no-record"]) == 2
    assert "--residual-per-block permutes after a matcher's alignment" in capsys.readouterr().err
    main(["transport", "zoo:vit-digits/0", "zoo:vit-digits-flipped/0", "zoo:vit-digits/1", "--residual-per-block",
          "--alpha", "0,1", "--max-examples", "64", "--out", str(tmp_path / "q"), "--no-record", "--json"])
    said = json.loads(capsys.readouterr().out)
    assert said["residual_per_block"] is True
    assert json.loads((tmp_path / "q" / "transport.json").read_text())["residual_per_block"] is True


def test_zhang_table2_preset_runs_every_fusion_in_every_state_and_decides_from_the_numbers(capsys, tmp_path):
    assert main(["sweep", "--preset", "zhang-table2", "--family", "vit-digits", "--seeds", "0", "1",
                 "--max-examples", "128", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    import pandas as pd

    from symalign.sweeps.zhang import FUSIONS, STATES

    cells = pd.read_csv(tmp_path / "zhang-table2-cells.csv")
    assert len(cells) == len(FUSIONS) * len(STATES) == 18
    assert cells["accuracy"].between(0, 1).all() and cells["loss"].gt(0).all()
    by = cells.set_index(["fusion", "state"])["accuracy"]
    for fusion in FUSIONS:  # each verdict line says what the numbers say (one pair: it holds on it or not)
        gain = by[(fusion.name, "matching")] - by[(fusion.name, "w/o matching")]
        verdict = "agrees (every pair: 1 of 1" if gain > 0 else "contradicted"
        assert (f"consistently improves the performance of different model fusion methods\" — {fusion.name}: "
                f"matching − w/o matching, merged accuracy: {verdict}") in text
    # without matching, the plug-in's rows are the plain rules: Simple Avg is `merge --align none`
    plain = merge_models([load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")], "none", "average",
                         "digits", max_examples=128)
    assert by[("Simple Avg", "w/o matching")] == pytest.approx(plain.report["merged"]["accuracy"])
    # all 18 of the paper's cells, as printed; the protocol the zoo does not run is named
    assert "Simple Avg: w/o matching 7.60%, matching w/o rescaling 10.22%, matching 10.19%" in text
    assert "OT-WTS: w/o matching 57.11%, matching w/o rescaling 57.16%, matching 57.17%" in text
    assert "not transcribed" not in text and "matches each layer separately" in text
    assert "rescaling helps" not in text  # not the paper's claim for this table (its cells go both ways)


def test_transfusion_presets_share_one_set_of_transports_and_decide_from_them(capsys, tmp_path):
    from symalign.sweeps.transfusion import STRATEGIES, fig4_summary, fig4_text, table3_summary, transfusion_cells

    cells = transfusion_cells("vit-digits", fine_tunes=[0], receivers=[1], alphas=(0.0, 1.0, 2.0), max_examples=128)
    assert len(cells) == len(STRATEGIES) * 3
    zero = cells[cells["alpha"] == 0]  # α = 0 is θ_B whatever the strategy
    assert zero["task_accuracy"].nunique() == 1 and zero["support_accuracy"].nunique() == 1
    table = table3_summary(cells).set_index("strategy")
    at1 = cells[cells["alpha"] == 1].set_index("strategy")
    for strategy in STRATEGIES:
        assert table.loc[strategy, "task_delta_mean"] == pytest.approx(
            at1.loc[strategy, "task_accuracy"] - zero["task_accuracy"].iloc[0])
    text = fig4_text(fig4_summary(cells), cells)
    assert "especially\": Ours (Full) − no π, Δ task at α = 1: " in text
    assert "(higher accuracy on the support set)\": Ours (Full) − no π, Δ support at each α ≥ 0.5: " in text
    support = (cells[(cells.alpha == 1) & (cells.strategy == "spectral")]["support_accuracy"].iloc[0]
               - cells[(cells.alpha == 1) & (cells.strategy == "without π")]["support_accuracy"].iloc[0])
    # one combination at α 1 and 2: the support verdict counts those two, each from the cells
    expect = sum(d > 0 for d in (support, cells[(cells.alpha == 2) & (cells.strategy == "spectral")][
        "support_accuracy"].iloc[0] - cells[(cells.alpha == 2) & (cells.strategy == "without π")][
        "support_accuracy"].iloc[0]))
    said = text.rsplit("Δ support at each α ≥ 0.5: ", 1)[1]
    assert said.startswith({2: "agrees (every pair", 1: "not separable (1 of 2", 0: "contradicted"}[expect])
    from symalign.sweeps.transfusion import table3_text

    table3 = table3_text(table3_summary(cells), cells)
    for row in ("Brute Force", "No Att-Align", "Ours (Full)"):  # the paper's names, its cells beside ours
        assert f"\n{row} " in table3
    assert "EuroSAT +4.95 / -0.06" in table3 and "EuroSAT 49.02% / 68.73%" in table3
    assert "residual perm per block" in table3 and "qk perm" in table3 and "orthogonal" not in table3  # perms only
    assert "\nOurs (Full), one residual permutation for the whole stream (ablation; not in the paper)" in table3
    assert "yields better performance than brute-force inter-head matching for two of the three" in table3
    assert main(["sweep", "--preset", "transfusion-table3", "--family", "llama-shakespeare"]) == 2
    assert "the transport presets run on" in capsys.readouterr().err
    # Table 3's preset evaluates only the α it reads, and finds there what the longer curve found
    from symalign.errors import SymalignError
    from symalign.sweeps.transfusion import preset_view

    assert preset_view("transfusion-fig4").alphas == (0.0, 0.01, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
    with pytest.raises(SymalignError, match="unknown TransFusion preset 'transfusion-table9'"):
        preset_view("transfusion-table9")
    short = transfusion_cells("vit-digits", fine_tunes=[0], receivers=[1],
                              alphas=preset_view("transfusion-table3").alphas, max_examples=128)
    assert sorted(set(short["alpha"])) == [0.0, 1.0]
    columns = ["strategy", "alpha", "task_accuracy", "support_accuracy", "task_loss", "support_loss"]
    same = cells[cells["alpha"] <= 1][columns].reset_index(drop=True)
    assert short[columns].reset_index(drop=True).equals(same)
    assert table3_text(table3_summary(short), short) == table3


def test_transfusion_table2_moves_a_classifiers_encoder_and_reuses_its_head():
    """TransFusion Table 2: the encoder's task vector moves, the fine-tune's own head is re-used unmoved. With
    B = A nothing has to move, so B + τ under the head is the fine-tune itself, whatever the alignment."""
    from symalign.data import load_data
    from symalign.landscape.evaluate import evaluate
    from symalign.merge.task_vectors import transport
    from symalign.sweeps.transfusion import (
        TABLE1_STRATEGIES,
        TABLE3_ALPHAS,
        table2_text,
        table3_summary,
        transfusion_cells,
        transport_combinations,
    )

    a, ft = load_model("zoo:bert-shakespeare/0"), load_model("zoo:bert-shakespeare-genre/0")
    own = evaluate(ft, load_data("shakespeare-genre"), 256)
    for how in ("none", "weight"):
        moved = transport(a, ft, a, [0.0, 1.0], "shakespeare-genre", "shakespeare-mlm", how, max_examples=256)
        assert moved.task_accuracy[1] == pytest.approx(own.accuracy, abs=1e-6)
        assert moved.task_loss[1] == pytest.approx(own.loss, rel=1e-4)
        assert moved.task_accuracy[0] != pytest.approx(own.accuracy, abs=0.05)  # A's encoder, ft's head: not ft
    combos = transport_combinations("bert-shakespeare")
    assert len(combos) == 6 and all(a.rsplit("/", 1)[1] == f.rsplit("/", 1)[1] != b.rsplit("/", 1)[1]
                                    for a, f, b in combos)  # each encoder from its own seed, into the others
    cells = transfusion_cells("bert-shakespeare", fine_tunes=[0], receivers=[1], alphas=TABLE3_ALPHAS,
                              strategies=TABLE1_STRATEGIES, max_examples=128)
    text = table2_text(table3_summary(cells), cells)
    for row in ("θ_B + τ ", "θ_B + τ (OT)", "θ_B + τ (Git Re-Basin)", "TransFusion (Ours)"):
        assert f"\n{row}" in text
    assert "QQP +6.50 · SST2 +5.96 · RTE +3.61 · CoLA +2.49" in text and "QQP 55.00%" in text
    zero = cells[(cells.alpha == 0) & (cells.strategy == "without π")].iloc[0]
    poor = zero["fine_tune_accuracy"] - zero["task_accuracy"]
    said = text.split("yields poor performance\": ", 1)[1]
    assert said.split(": ", 1)[1].startswith("agrees" if poor > 0 else "contradicted")
    assert "highest and more consistent performance gains\": TransFusion's Δ task − the largest" in text


def test_a_per_layer_alpha_learned_on_few_shots_lowers_their_loss_and_table4_decides_on_it():
    """TransFusion Table 4: one α per layer fitted on 10 examples per class, from α = 1 (the transport as it
    is); the fit lowers the loss on those shots, the preset scores it against θ_B and against τ unpermuted."""
    from symalign.data import load_data
    from symalign.landscape.evaluate import batch_loss
    from symalign.merge.layer_alphas import few_shots, fit_layer_alphas, layer_of, scaled
    from symalign.merge.task_vectors import task_vector_in
    from symalign.sweeps.transfusion import preset_view, table4_summary, table4_text, transfusion_cells

    a, ft, b = (canonicalize(load_model(r)) for r in ("zoo:vit-digits/0", "zoo:vit-digits-flipped/0",
                                                      "zoo:vit-digits/1"))
    data = load_data("digits-flipped")
    x, y = few_shots(data, b, 3)
    assert sorted(y.tolist()) == sorted(list(range(10)) * 3)  # 3 of each digit, from the training split
    assert torch.equal(few_shots(data, b, 3)[1], y)  # the same examples every time
    tau = task_vector_in(b, a, ft, "none", None)
    assert layer_of("layer.2.mlp.fc.weight") == "layer.2" and layer_of("embed.token") == "embed"
    ones = scaled(b, tau, {})
    assert torch.allclose(ones.tensors["layer.0.mlp.fc.weight"],
                          (b.tensors["layer.0.mlp.fc.weight"].double() + tau["layer.0.mlp.fc.weight"]).float())

    def shot_loss(model):
        logits = model.to_module().eval()(**x).logits
        return float(batch_loss(logits, y)[0]) / len(y)

    alphas = fit_layer_alphas(b, tau, data, shots=3, steps=20)
    assert set(alphas) == {layer_of(n) for n in tau} and any(abs(v - 1) > 0.05 for v in alphas.values())
    assert shot_loss(scaled(b, tau, alphas)) < shot_loss(ones) - 0.01
    view = preset_view("transfusion-table4")
    cells = transfusion_cells("vit-digits", fine_tunes=[0], receivers=[1], alphas=view.alphas,
                              strategies=view.strategies, max_examples=128, shots=view.shots)
    assert cells["fitted"].sum() == 2 and len(cells) == 4
    text = table4_text(table4_summary(cells), cells)
    assert "EuroSAT +10.00 · DTD +1.21 · GTSRB +6.80 · SVHN +10.52" in text and "θ_B + ατ " in text
    fitted = cells[cells["fitted"]].set_index("strategy")["task_accuracy"]
    said = text.split("without permutation, yields inferior outcomes\": ", 1)[1].split(": ", 1)[1]
    gain = fitted["spectral"] - fitted["without π"]
    assert said.startswith("agrees" if gain > 0 else "contradicted" if gain < 0 else "not separable")


def test_zhang_fig6_matches_one_layer_or_the_last_ones_and_decides_on_the_merged_loss():
    """Zhang Fig. 6 on the 2-layer genre classifiers: attention matching restricted to the first layer, to the
    last (Tail-Layers k = 1) or both; a restricted matching leaves the other layer as it is; the claim (head
    layers help more than tail layers) is decided on the merged evaluation loss, lower the better."""
    from symalign.sweeps.zhang import ATTENTION_MATCHING, zhang_cells, zhang_summary, zhang_text

    a, b = load_model("zoo:bert-shakespeare-genre/0"), load_model("zoo:bert-shakespeare-genre/1")
    last = align(a, b, AlignConfig(method="weight", classes=dict(ATTENTION_MATCHING), layers="-1")).aligned
    canon = canonicalize(b)
    assert all(torch.equal(last.tensors[n], t) for n, t in canon.tensors.items() if n.startswith("layer.0."))
    assert any(not torch.equal(last.tensors[n], t) for n, t in canon.tensors.items() if n.startswith("layer.1."))
    cells = zhang_cells("bert-shakespeare-genre", seeds=[0, 1], max_examples=128, preset="zhang-fig6")
    loss = cells.set_index("state")["loss"]
    assert list(loss.index) == ["w/o matching", "first layer only", "last layer only (tail 1)",
                                "both layers (tail 2)"]
    assert loss.nunique() == 4  # each restriction merges another model
    text = zhang_text(zhang_summary(cells), cells, preset="zhang-fig6")
    said = text.split("last layer only (tail 1) − first layer only, merged evaluation loss: ", 1)[1]
    gain = loss["last layer only (tail 1)"] - loss["first layer only"]
    assert said.startswith("agrees" if gain > 0 else "contradicted")
    assert "7.60%" not in text and "not testable on the zoo" in text  # no Table 2 cell borrowed


def test_zhang_fig3_takes_each_part_of_the_matching_out_and_says_what_each_does(capsys):
    assert main(["sweep", "--preset", "zhang-fig3", "--family", "vit-digits", "--seeds", "0", "1",
                 "--max-examples", "64"]) == 0
    text = capsys.readouterr().out
    # comparative claims as comparisons, for the methods the paper names; rescaling over every method
    assert text.count("attention matching contributes more significantly") == 2  # Fisher, RegMean
    assert "— Fisher: w/o FFN − w/o ATTN" in text and "— RegMean: w/o FFN − w/o ATTN" in text
    assert text.count("OTFusion benefits more from FFN matching") == 3  # the three OT methods
    assert "— OT-WTS: w/o ATTN − w/o FFN" in text
    assert text.count("results in performance degradation across most settings") == 7  # six methods and the count
    counted = next(line for line in text.splitlines() if "counted over the 6 fusion methods" in line)
    agree = sum("across most settings\" — " in line and ": agrees" in line for line in text.splitlines())
    assert f": {agree} agree," in counted and ("most settings (more than half): agrees" in counted) == (agree > 3)


def test_zhang_fig4_ot_of_the_ffn_alone_moves_only_mlp_units_and_keeps_b(pair):
    from symalign.match.weight.descent import distance
    from symalign.models import outputs, random_inputs
    from symalign.sweeps.zhang_figures import _aligned_b, fig4_cells

    a, b = pair
    carried, canon_b = _aligned_b(a, b, "ot-ffn"), canonicalize(b)
    changed = {n for n in canon_b.tensors if not torch.equal(canon_b.tensors[n], carried.tensors[n])}
    assert changed and all(".mlp." in n for n in changed), changed
    x = random_inputs(b, n=8)
    assert float((outputs(canon_b, x) - outputs(carried, x)).abs().max()) < 1e-4  # exact plans: a permutation
    cells = fig4_cells("vit-digits", [0, 1]).set_index("row")["distance"]
    assert cells["no matching"] == pytest.approx(distance(canonicalize(a).tensors, canon_b.tensors))
    assert cells["their matching w/o rescaling"] < cells["no matching"]


def test_zhang_fig5_curves_run_from_a_to_b_whichever_parts_are_matched(pair, tmp_path, capsys):
    assert main(["sweep", "--preset", "zhang-fig5", "--family", "vit-digits", "--seeds", "0", "1", "--points", "3",
                 "--max-examples", "64", "--out", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "Complete matching yields the lowest loss barrier\", by the range of loss" in said
    assert "by the barrier above the straight line" in said
    import pandas as pd

    cells = pd.read_csv(tmp_path / "zhang-fig5-cells.csv")
    ends = cells[cells["lambda"].isin([0.0, 1.0])].groupby("lambda")["loss"]
    assert (ends.max() - ends.min()).max() < 1e-4  # every row's path starts at A and ends at B's function
    assert (tmp_path / "zhang-fig5.html").stat().st_size > 1000


def test_zhang_table1_matches_attention_only_keeps_as_head_and_scores_macro_f1(capsys, tmp_path):
    """Zhang et al. Table 1 as the paper runs it: only the attention layers matched (the MLP and residual
    untouched), the classifier copied from the model fine-tuned on the task, macro F1 of the merged model."""
    import pandas as pd

    from symalign.data import load_data
    from symalign.landscape.evaluate import Evaluator
    from symalign.sweeps.zhang import ATTENTION_MATCHING

    a, b = load_model("zoo:bert-shakespeare-genre/0"), load_model("zoo:bert-shakespeare-genre/1")
    config = AlignConfig(method="weight", classes=dict(ATTENTION_MATCHING))
    plain = merge_models([a, b], "none", "average", "shakespeare-genre", max_examples=96, keep_head=True)
    matched = merge_models([a, b], "weight", "average", "shakespeare-genre", max_examples=96, keep_head=True,
                           alignment=config)
    head = {n: t for n, t in canonicalize(a).tensors.items() if n.startswith("head.")}
    assert head and all(torch.equal(matched.merged.tensors[n], t) for n, t in head.items())  # copied, not averaged
    assert not torch.equal(merge_models([a, b], "none", "average", "shakespeare-genre", max_examples=96)
                           .merged.tensors["head.weight"], head["head.weight"])
    for name, t in plain.merged.tensors.items():  # attention moved; MLP units and the residual stream did not
        same = torch.allclose(matched.merged.tensors[name], t, atol=1e-6)
        assert same == (".attn.q" not in name and ".attn.k" not in name and ".attn.v" not in name
                        and ".attn.o.weight" not in name), name
    # macro F1: the classes' F1 averaged, from the merged model's own predictions
    evaluator = Evaluator(matched.merged, load_data("shakespeare-genre"), 96)
    params = evaluator.hf_params(matched.merged)
    ys, ps = [], []
    for inputs, y in evaluator.batches:
        ps.append(torch.func.functional_call(evaluator.module, params, args=(), kwargs=inputs).logits.argmax(-1))
        ys.append(y)
    y, p = torch.cat(ys), torch.cat(ps)
    f1 = [2 * int(((p == c) & (y == c)).sum()) / max(1, int((p == c).sum() + (y == c).sum())) for c in range(3)]
    assert matched.report["merged"]["macro_f1"] == pytest.approx(sum(f1) / 3, abs=1e-12)

    assert main(["sweep", "--preset", "zhang-table1", "--family", "bert-shakespeare-genre", "--seeds", "0", "1",
                 "--max-examples", "96", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    cells = pd.read_csv(tmp_path / "zhang-table1-cells.csv")
    assert sorted(set(cells["fusion"])) == ["Fisher", "RegMean", "Simple Avg"] and set(cells["state"]) == {
        "w/o matching", "+match"}
    by = cells.set_index(["fusion", "state"])["macro_f1"]
    assert by[("Simple Avg", "+match")] == pytest.approx(matched.report["merged"]["macro_f1"])
    assert by[("Simple Avg", "w/o matching")] == pytest.approx(plain.report["merged"]["macro_f1"])
    gain = by[("Fisher", "+match")] - by[("Fisher", "w/o matching")]
    assert ("Fisher: +match − w/o matching, merged macro F1: "
            + ("agrees (every pair: 1 of 1" if gain > 0 else "contradicted")) in text
    assert "RegMean: w/o matching RoBERTa 35.87, DeBERTa 2.99; +match RoBERTa 39.95, DeBERTa 2.99" in text
    assert "the zoo has one size of sequence classifier" in text
