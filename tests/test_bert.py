"""BERT and RoBERTa: post-LN encoders scored as masked language models.

Post-LN puts LayerNorm on the residual stream itself, so the residual admits permutations only:
the spec refuses the rest with that reason, and bypassing the refusal changes the function.
Planted transforms are recovered; the masked-LM evaluation is deterministic and scores only the
masked positions."""

from __future__ import annotations

import json

import pytest
import torch

from symalign.cli import main
from symalign.data import load_data
from symalign.data.text import MASK_FRACTION, char_tokenizer, model_tokenizer
from symalign.errors import InadmissibleError, SymalignError
from symalign.landscape.evaluate import evaluate
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import (
    canonicalize,
    is_canonical,
    load_model,
    outputs,
    random_inputs,
    save_model,
    spec_of,
    transformed,
)
from symalign.models.tiny import random_model, tiny_config
from symalign.runs import RunStore
from symalign.symmetry.groups import Dense
from symalign.symmetry.random import random_orthogonal, random_transform
from symalign.symmetry.transform import Transform, apply_unchecked
from tests.upload_support import upload_and_align

TOL = 1e-4
PLANTED = {"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "orthogonal", "residual": "perm"}


@pytest.fixture(scope="module", params=["bert", "roberta"])
def text_encoder(request, tmp_path_factory):
    """A random encoder that can read the plays: saved with a character tokenizer that has <mask>."""
    folder = tmp_path_factory.mktemp(request.param)
    tokenizer = char_tokenizer(load_data("shakespeare-mlm").text, mask=True)
    config = tiny_config(request.param, layers=2, width=32, heads=4, mlp=48, tied=True, vocab=len(tokenizer),
                         context=64)
    save_model(random_model(config, seed=2), folder)
    tokenizer.save_pretrained(str(folder))
    return folder


def test_post_ln_residual_admits_permutations_only_and_the_refusal_is_needed():
    model = random_model(tiny_config("bert", layers=2, width=32, heads=4, mlp=48), seed=1)
    spec = spec_of(model)
    assert is_canonical(model) and canonicalize(model) is model  # nothing to absorb
    for cls in ("orthogonal", "invertible", "scaled_perm", "rotary"):
        with pytest.raises(InadmissibleError, match="post-LN"):
            spec.check_classes({"residual": cls})
    assert AlignConfig(preset="all").for_spec(spec).classes["residual"] == "perm"
    x = random_inputs(model, n=3)
    q = Dense(random_orthogonal(32, torch.Generator().manual_seed(0)), "orthogonal")
    # even with every LayerNorm at γ = 1, β = 0 (the engine refuses to rotate a non-constant gain at all),
    # the norm's mean-centring on the stream itself does not commute with a rotation
    plain = model.with_tensors({k: (torch.ones_like(v) if k.endswith("norm.weight") or k.endswith("ln1.weight")
                                    or k.endswith("ln2.weight") else torch.zeros_like(v) if "norm.bias" in k
                                    or k.endswith("ln1.bias") or k.endswith("ln2.bias") else v)
                                for k, v in model.tensors.items()})
    rotated = plain.with_tensors(apply_unchecked(plain.tensors, spec, Transform({"residual": q})))
    assert (outputs(rotated, x) - outputs(plain, x)).abs().max().item() > 1e-2
    permuted = transformed(model, random_transform(spec, {"residual": "perm"}, seed=3))
    assert (outputs(permuted, x) - outputs(model, x)).abs().max().item() < TOL


def test_masked_lm_evaluation_is_deterministic_and_scores_masked_positions_only(text_encoder):
    model = load_model(text_encoder)
    data = load_data("shakespeare-mlm")
    batches = list(data.eval_batches(model, max_examples=8))
    again = list(data.eval_batches(model, max_examples=8))
    (x, y), (x2, y2) = batches[0], again[0]
    assert torch.equal(x["input_ids"], x2["input_ids"]) and torch.equal(y, y2)
    masked = y != -100
    mask_id = 0 + int(x["input_ids"][masked][0])
    assert (x["input_ids"][masked] == mask_id).all() and not (x["input_ids"][~masked] == mask_id).any()
    assert abs(float(masked.float().mean()) - MASK_FRACTION) < 0.05
    first, second = evaluate(model, data, max_examples=8), evaluate(model, data, max_examples=8)
    assert first == second and first.loss > 1.0
    with pytest.raises(SymalignError, match="text data but the model is a"):
        load_data("shakespeare").check_model(model)  # a causal-LM source does not fit an encoder


def test_planted_transforms_are_recovered_by_activation_matching(text_encoder):
    a = load_model(text_encoder)
    b = transformed(a, random_transform(spec_of(a), PLANTED, seed=8))
    result = align(a, b, AlignConfig(method="activation", classes=PLANTED, data="shakespeare-mlm", max_examples=16))
    assert result.report.distance_after < TOL


def test_cli_aligns_a_planted_encoder_and_measures_a_flat_curve(text_encoder, tmp_path, capsys):
    planted = tmp_path / "planted"
    assert main(["transform", str(text_encoder), "--random", "--seed", "4", "--out", str(planted)]) == 0
    capsys.readouterr()
    # 5 points, not the default 21: a pseudo-perplexity point masks every position of every example (about
    # 1.6 s each here); a planted transform undone exactly is flat at every λ, so the midpoints show it
    assert main(["align", str(text_encoder), str(planted), "--classes", "all", "--barrier", "--data", "shakespeare-mlm",
                 "--max-examples", "8", "--points", "5", "--out", str(tmp_path / "aligned"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["classes"]["residual"] == "perm" and abs(report["barrier"]) < 1e-3
    run = RunStore().get(report["run"])
    assert run.settings["points"] == 5 and len(run.metrics["curve"]["lambdas"]) == 5  # --points reached the curve


def test_unsupported_encoder_layouts_are_one_line(text_encoder, tmp_path, capsys):
    folder = tmp_path / "variant"
    folder.mkdir()
    for f in text_encoder.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "config.json").read_text()) | {"position_embedding_type": "relative_key"}
    (folder / "config.json").write_text(json.dumps(config))
    assert main(["inspect", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "position_embedding_type" in err and err.count("\n") == 1


def test_three_planted_encoders_share_one_basis_and_a_flat_simplex(text_encoder):
    from symalign.landscape.simplex import simplex_surface
    from symalign.match.universe import align_many

    a = load_model(text_encoder)
    copies = [transformed(a, random_transform(spec_of(a), PLANTED, seed=s)) for s in (11, 12)]
    universe = align_many([a, *copies], AlignConfig(method="weight", classes=PLANTED))
    surface = simplex_surface(*universe.aligned, load_data("shakespeare-mlm"), resolution=2, max_examples=4)
    assert max(surface.loss) - min(surface.loss) < 1e-4


def test_an_uploaded_bert_zip_is_accepted_and_aligns_against_the_zoo(tmp_path):
    # no barrier: the alignment is what is checked, and a pseudo-perplexity curve was most of this test's 23 s
    uploaded, run = upload_and_align("zoo:bert-shakespeare/0", "zoo:bert-shakespeare/1", "my-bert", tmp_path,
                                     measure=False)
    assert uploaded.family.name == "bert"
    report = run.alignment.report
    assert report.config["classes"]["residual"] == "perm" and report.function_gap_vs_b < TOL
    assert report.distance_after < report.distance_before - 0.05


def test_a_masked_lm_pair_is_measured_on_a_plain_text_file(text_encoder, tmp_path):
    """`text:PATH` scores an encoder as a masked LM (issue #42): 15% of the tokens replaced by the
    model's own mask token, the same positions at every λ and in every load, loss and accuracy over
    the masked tokens only; a causal LM reads the same file as next-token prediction."""
    path = tmp_path / "corpus.txt"
    path.write_text(load_data("shakespeare").text[:40_000])
    model = load_model(str(text_encoder))
    data = load_data(f"text:{path}")
    data.check_model(model)
    first = list(data.eval_batches(model, max_examples=8))
    again = list(load_data(f"text:{path}").eval_batches(model, max_examples=8))
    mask_id = model_tokenizer(str(text_encoder)).mask_token_id
    for (x, y), (x2, y2) in zip(first, again):
        assert torch.equal(x["input_ids"], x2["input_ids"]) and torch.equal(y, y2)  # the same masks every time
        scored = y != -100
        assert (x["input_ids"][scored] == mask_id).all() and (x["input_ids"][~scored] != mask_id).all()
        assert abs(float(scored.float().mean()) - MASK_FRACTION) < 0.05
    other_dir = tmp_path / "other"
    save_model(random_model(model.config, seed=5), other_dir)
    model_tokenizer(str(text_encoder)).save_pretrained(str(other_dir))
    other = load_model(str(other_dir))
    curve = interpolation_curve(model, other, data, points=3, max_examples=8)
    by_hand = []  # λ = 0 and 1 are the models themselves, scored on the masked tokens only
    for m in (model, other):
        logits = torch.cat([outputs(m, x) for x, _ in first])
        target = torch.cat([y for _, y in first])
        by_hand.append(float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten(),
                                                               ignore_index=-100)))
    assert [curve.loss[0], curve.loss[-1]] == pytest.approx(by_hand, rel=1e-4)
    with pytest.raises(SymalignError, match="text data but the model is a vit"):
        data.check_model(load_model("zoo:vit-digits/0"))
