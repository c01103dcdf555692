"""Task-vector transport (issue #12): α = 0 is B exactly; into a planted copy of the base, the
aligned task vector reproduces the fine-tune's function exactly (and the unaligned one does not);
on the zoo the transported B learns the fine-tune's task; bad input is one line, exit 2."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForImageClassification

from symalign.cli import main
from symalign.errors import SymalignError
from symalign.match.config import CLASS_PRESETS
from symalign.merge import parse_alphas, transport
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.random import random_transform


def fine_tuned(model, scale: float = 0.05, seed: int = 3):
    """A stand-in fine-tune: the base plus a small random step on every tensor."""
    g = torch.Generator().manual_seed(seed)
    return model.with_tensors({k: v + scale * v.std() * torch.randn(v.shape, generator=g) if v.numel() > 1 else v
                               for k, v in model.tensors.items()})


@pytest.fixture(scope="module")
def trio():
    a = canonicalize(random_model(tiny_config("vit", layers=2, width=32, heads=4), seed=0))
    b = transformed(a, random_transform(spec_of(a), CLASS_PRESETS["all"], seed=1))  # A in another basis
    return a, fine_tuned(a), b


def gap(x, y) -> float:
    inputs = random_inputs(x, n=6)
    return float((outputs(x, inputs) - outputs(y, inputs)).abs().max())


def test_alpha_lists_parse_or_fail_in_one_line():
    assert parse_alphas("0, 0.5,1") == [0.0, 0.5, 1.0]
    for bad in ("0,x", "", "nan", "1;2"):
        with pytest.raises(SymalignError, match="alpha"):
            parse_alphas(bad)


def test_alpha_zero_is_b_exactly_and_the_aligned_vector_carries_the_fine_tune(trio):
    a, a_ft, b = trio
    result = transport(a, a_ft, b, [0.0, 1.0], "digits", "digits", "weight", max_examples=64)
    zero, one = result.models
    canon_b = canonicalize(b)
    assert all(torch.equal(zero.tensors[n], canon_b.tensors[n]) for n in canon_b.tensors)
    assert gap(zero, b) < 1e-5
    assert gap(one, a_ft) < 1e-4  # B + π(A′ − A) = π(A′): the fine-tune's own function, in B's basis
    plain = transport(a, a_ft, b, [1.0], "digits", "digits", "none", max_examples=64).models[0]
    assert gap(plain, a_ft) > 100 * gap(one, a_ft)  # added in the wrong basis it is not the fine-tune


def test_cli_transport_writes_the_best_alpha_checkpoint_and_records_a_run(trio, tmp_path, capsys, monkeypatch):
    from symalign.runs import RunStore
    from symalign.runs.table import run_label

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    a, a_ft, b = trio
    paths = {}
    for name, model in (("a", a), ("a_ft", a_ft), ("b", b)):
        paths[name] = save_model(model, tmp_path / name)
    out = tmp_path / "out"
    assert main(["transport", str(paths["a"]), str(paths["a_ft"]), str(paths["b"]), "--alpha", "0,0.5,1",
                 "--data-task", "digits", "--data-base", "digits", "--max-examples", "64", "--out", str(out),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) >= {"alpha", "task_loss", "base_loss", "best_alpha", "out"}
    assert report["alpha"] == [0.0, 0.5, 1.0] and len(report["task_loss"]) == 3
    assert report["best_alpha"] == report["alpha"][report["task_loss"].index(min(report["task_loss"]))]
    (run,) = RunStore(tmp_path / "home" / "runs.sqlite").list(kind="transport")
    assert run.id == report["run"] and run.metrics["best_alpha"] == report["best_alpha"] and run.artifacts == str(out)
    assert run_label(run).startswith(f"transport (weight alignment): {paths['a_ft']} → {paths['b']}")
    module = AutoModelForImageClassification.from_pretrained(out).eval()
    saved = load_model(out)
    x = random_inputs(saved, n=3)
    with torch.no_grad():
        assert torch.allclose(module(**x).logits, outputs(saved, x), atol=1e-5)


@pytest.mark.parametrize("argv, message", [
    (["--alpha", "0,zero"], "does not parse"),
    (["--wide-fine-tune"], "does not match its base"),
])
def test_bad_transports_are_one_line_and_write_nothing(trio, tmp_path, capsys, monkeypatch, argv, message):
    from symalign.runs import RunStore

    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    a, a_ft, b = trio
    if argv == ["--wide-fine-tune"]:
        a_ft, argv = canonicalize(random_model(tiny_config("vit", layers=2, width=48, heads=4), seed=5)), []
    paths = [save_model(m, tmp_path / n) for n, m in (("a", a), ("a_ft", a_ft), ("b", b))]
    out = tmp_path / "out"
    assert main(["transport", *map(str, paths), *argv, "--data-task", "digits", "--data-base", "digits",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()
    history = tmp_path / "home" / "runs.sqlite"
    assert not history.exists() or RunStore(history).list() == []


def test_on_the_zoo_the_transported_task_vector_teaches_b_the_fine_tunes_task():
    """zoo:vit-digits-flipped/0 is zoo:vit-digits/0 fine-tuned on mirrored digits; carried into seed 1
    by weight matching, its task vector lowers seed 1's mirrored-digits loss (README: transport table)."""
    a, a_ft, b = (load_model(r) for r in ("zoo:vit-digits/0", "zoo:vit-digits-flipped/0", "zoo:vit-digits/1"))
    result = transport(a, a_ft, b, [0.0, 0.5, 1.0], "digits-flipped", "digits", "weight")
    assert min(result.task_loss[1:]) < result.task_loss[0] - 0.5
    assert result.best_alpha > 0 and result.base_loss[0] < 0.2  # B itself still knows plain digits


def test_on_the_zoo_a_text_fine_tune_carries_over_too():
    """zoo:gpt-shakespeare-upper/0 is zoo:gpt-shakespeare/0 fine-tuned on the plays in capitals
    (base loss there 3.17, fine-tune 1.87); carried into seed 1 by weight matching it lowers seed 1's
    loss on the capitals while seed 1 keeps the plain text (README: transport table)."""
    refs = ("zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare-upper/0", "zoo:gpt-shakespeare/1")
    a, a_ft, b = (load_model(r) for r in refs)
    result = transport(a, a_ft, b, [0.0, 1.0], "shakespeare-upper", "shakespeare", "weight", max_examples=32)
    assert result.task_loss[1] < result.task_loss[0] - 0.5
    assert result.base_loss[1] < result.base_loss[0] + 1.0  # measured +0.53 on average at α = 1
