"""The Llama family: RMSNorm, RoPE, grouped-query attention and SwiGLU, read from one spec.

What each of them admits is tested against the function itself: the admissible classes keep the
logits (test_function_preservation covers every class on random configs), and each refusal is
necessary: bypassing it changes the function. Planted transforms, RoPE-restricted QK maps and
grouped head permutations included, are recovered by weight and activation matching."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from symalign.cli import main
from symalign.data import load_data
from symalign.data.text import char_tokenizer
from symalign.errors import InadmissibleError, SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.groups import Dense, ScaledPermutation
from symalign.symmetry.random import random_orthogonal, random_transform
from symalign.symmetry.transform import Transform, apply_unchecked
from tests.upload_support import upload_and_align

TOL = 1e-4
ALL = {"mlp": "perm", "heads": "perm", "qk": "rotary", "vo": "invertible", "residual": "orthogonal"}


def llama(kv_heads: int = 2, seed: int = 0, family: str = "llama", **kwargs):
    options = dict(layers=2, width=32, heads=4, kv_heads=kv_heads, mlp=48, tied=False) | kwargs
    return canonicalize(random_model(tiny_config(family, **options), seed=seed))


def gap(model, other, x) -> float:
    return (outputs(other, x) - outputs(model, x)).abs().max().item()


def bypass(model, transform: Transform):
    """The model under `transform` without the spec's admissibility check (to show a refusal is needed)."""
    return model.with_tensors(apply_unchecked(model.tensors, spec_of(model), transform))


def test_spec_reads_grouped_heads_and_refuses_what_rope_rmsnorm_and_swiglu_break():
    model = llama(kv_heads=2)
    spec = spec_of(model)
    heads, qheads, qk = spec.spaces["layer.0.heads"], spec.spaces["layer.0.qheads"], spec.spaces["layer.0.qk"]
    assert (heads.size, qheads.size, qheads.count, qk.count, qk.size) == (2, 2, 2, 2, 8)
    assert qheads.kind == "heads" and qheads.batched_by == heads.name == qk.batched_by
    assert not spec.spaces["residual"].fixes_ones  # RMSNorm: no mean, so no Q·1 = 1 condition
    for kind, cls, reason in [("qk", "orthogonal", "RoPE"), ("qk", "invertible", "RoPE"), ("qk", "perm", "RoPE"),
                              ("mlp", "scaled_perm", "not positively homogeneous"), ("mlp", "orthogonal", "gated"),
                              ("residual", "invertible", "RMSNorm"), ("heads", "orthogonal", "whole units")]:
        with pytest.raises(InadmissibleError, match=reason):
            spec.check_classes({kind: cls})
    spec.check_classes(ALL | {"qk": "rescale", "vo": "orthogonal"})
    raw = spec_of(random_model(tiny_config("llama", layers=1, width=16, heads=2), seed=0))
    with pytest.raises(InadmissibleError, match="RMSNorm gains are not absorbed"):
        raw.check_classes({"residual": "orthogonal"})
    # a preset asks for orthogonal QK maps: on a RoPE model the widest admissible class stands in
    assert AlignConfig(preset="all").for_spec(spec).classes["qk"] == "rotary"


def test_refused_maps_really_change_the_function():
    """Each refusal is necessary: a general QK rotation (RoPE), a scaled gate (SiLU) and a residual
    map that is not orthogonal (RMSNorm) change the logits; the admitted ones do not."""
    model = llama(kv_heads=2, seed=3)
    x = random_inputs(model, n=3, seed=1)
    g = torch.Generator().manual_seed(0)
    spec = spec_of(model)
    kv, dh, d = model.dims.kv_heads, model.dims.d_head, model.dims.d_model
    refused = {
        "general QK rotation": Transform({"layer.0.qk": Dense(random_orthogonal(dh, g, kv), "orthogonal")}),
        "scaled MLP units": Transform({"layer.0.mlp": ScaledPermutation(torch.arange(48),
                                                                        torch.rand(48, generator=g) + 0.5)}),
        "residual GL map": Transform({"residual": Dense(torch.eye(d, dtype=torch.float64)
                                                        + 0.3 * torch.randn(d, d, generator=g, dtype=torch.float64))}),
    }
    for what, transform in refused.items():
        assert gap(model, bypass(model, transform), x) > 1e-2, what
    admitted = random_transform(spec, {"qk": "rotary", "residual": "orthogonal"}, seed=2)
    q = admitted["residual"].dense()
    assert (q @ torch.ones(d, dtype=torch.float64) - 1).abs().max() > 0.1  # it moves the all-ones vector
    assert gap(model, transformed(model, admitted), x) < TOL


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
@pytest.mark.parametrize("classes", [ALL, ALL | {"qk": "rescale", "vo": "orthogonal"}], ids=["rotary", "rescale"])
def test_planted_transforms_are_recovered_by_weight_matching(kv_heads, classes):
    a = llama(kv_heads=kv_heads, seed=kv_heads)
    planted = random_transform(spec_of(a), classes, seed=5)
    b = transformed(a, planted)
    x = random_inputs(a, n=2, seed=0)
    assert gap(a, b, x) < TOL
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert result.report.distance_before > 0.5
    assert result.report.distance_after < TOL, result.report.sweeps[-1]
    undone = result.transform.compose(planted, spec_of(a))  # the recovered transform undoes the planted one
    for name in ("layer.1.heads", "layer.1.qheads", "layer.1.qk", "layer.1.vo"):
        m = undone[name].dense()
        assert (m - torch.eye(m.shape[-1], dtype=torch.float64)).abs().max() < 1e-3, name


@pytest.mark.parametrize("layout", [dict(family="qwen2"), dict(attention_bias=True, mlp_bias=True)],
                         ids=["qwen2 (q/k/v biases)", "llama with attention and MLP biases"])
@pytest.mark.parametrize("classes", [ALL, ALL | {"qk": "rescale", "vo": "orthogonal"}], ids=["rotary", "rescale"])
def test_planted_transforms_are_recovered_with_biases(layout, classes):
    """Biases move with their weights' rows (q's under the rotary map, which commutes with RoPE
    because the bias is added before it); weight matching still recovers the planted transform."""
    a = llama(kv_heads=2, seed=7, **layout)
    assert {"layer.0.attn.q.bias", "layer.0.attn.k.bias"} <= set(a.tensors)
    planted = random_transform(spec_of(a), classes, seed=8)
    b = transformed(a, planted)
    assert gap(a, b, random_inputs(a, n=2, seed=0)) < TOL
    assert (b.tensors["layer.1.attn.q.bias"] - a.tensors["layer.1.attn.q.bias"]).abs().max() > 1e-2
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert result.report.distance_before > 0.5 and result.report.distance_after < TOL


@pytest.fixture(scope="module")
def text_llama(tmp_path_factory):
    """A random Llama that can read the plays: saved with the character tokenizer."""
    folder = tmp_path_factory.mktemp("llama")
    tokenizer = char_tokenizer(load_data("shakespeare").text)
    config = tiny_config("llama", layers=2, width=32, heads=4, kv_heads=2, mlp=48, tied=True, vocab=len(tokenizer),
                         context=64)
    save_model(random_model(config, seed=4), folder)
    tokenizer.save_pretrained(str(folder))
    return folder


def test_planted_transforms_are_recovered_by_activation_matching(text_llama, tmp_path):
    tokenizer = char_tokenizer(load_data("shakespeare").text)
    qwen = tiny_config("qwen2", layers=2, width=32, heads=4, kv_heads=2, mlp=48, tied=False, vocab=len(tokenizer),
                       context=64)
    save_model(random_model(qwen, seed=5), tmp_path / "qwen2")
    tokenizer.save_pretrained(str(tmp_path / "qwen2"))
    for folder in (text_llama, tmp_path / "qwen2"):
        a = canonicalize(load_model(folder))
        for classes in (ALL, ALL | {"qk": "rescale", "vo": "orthogonal"}):
            b = transformed(a, random_transform(spec_of(a), classes, seed=6))
            result = align(a, b, AlignConfig(method="activation", classes=classes, data="shakespeare", max_examples=16))
            assert result.report.distance_after < TOL, (a.config.model_type, classes)


def test_cli_transform_and_align_a_llama_checkpoint(text_llama, tmp_path, capsys):
    """The default random transform fits the spec (rotary QK maps), survives a plain reload, and
    `align --classes all` recovers it."""
    planted = tmp_path / "planted"
    assert main(["transform", str(text_llama), "--random", "--seed", "3", "--out", str(planted)]) == 0
    capsys.readouterr()
    x = random_inputs(load_model(text_llama), n=2, seed=0)
    with torch.no_grad():
        before = AutoModelForCausalLM.from_pretrained(str(text_llama))(**x).logits
        after = AutoModelForCausalLM.from_pretrained(str(planted))(**x).logits
    assert (after - before).abs().max().item() < TOL
    assert main(["align", str(text_llama), str(planted), "--classes", "all", "--barrier", "--out",
                 str(tmp_path / "aligned"),
                 "--data", "shakespeare", "--max-examples", "8", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["classes"]["qk"] == "rotary"
    assert report["distance_after"] < TOL and abs(report["barrier"]) < 1e-3


@pytest.mark.parametrize("change, message", [
    ({"model_type": "mistral", "architectures": ["MistralForCausalLM"], "sliding_window": 16}, "sliding-window"),
    ({"num_local_experts": 4}, "mixture of experts"),
    ({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "use_sliding_window": True,
      "sliding_window": 16, "max_window_layers": 1}, "sliding-window"),
    ({"attention_bias": True}, "do not fit its config.json: missing model.layers.0.self_attn.k_proj.bias"),
    ({"head_dim": 16}, "head_dim"),
    ({"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"]},
     "unsupported architecture 'deepseek_v3'"),
])
def test_unsupported_llama_layouts_are_one_line(text_llama, tmp_path, capsys, change, message):
    folder = tmp_path / "variant"
    folder.mkdir()
    for f in text_llama.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "config.json").read_text()) | change
    (folder / "config.json").write_text(json.dumps(config))
    assert main(["inspect", str(folder)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_an_uploaded_llama_zip_is_accepted_and_aligns_against_the_zoo(tmp_path):
    uploaded, run = upload_and_align("zoo:llama-shakespeare/0", "zoo:llama-shakespeare/1", "my-llama", tmp_path)
    assert uploaded.family.name == "llama" and uploaded.dims.group == 2
    report = run.alignment.report
    assert report.config["classes"]["qk"] == "rotary" and report.function_gap_vs_b < TOL
    assert report.distance_after < report.distance_before - 0.1
    assert run.curve.barrier < 1.0  # the README's none → weight drop (1.30 → 0.71 on 0↔1)


def test_three_planted_llamas_share_one_basis_and_a_flat_simplex(text_llama):
    """align-many (weight, rotary QK maps) brings two planted copies into the reference's basis; the
    loss over their simplex is then the reference's loss everywhere (within 1e-4)."""
    from symalign.landscape.simplex import simplex_surface
    from symalign.match.universe import align_many

    a = canonicalize(load_model(text_llama))
    copies = [transformed(a, random_transform(spec_of(a), ALL, seed=s)) for s in (11, 12)]
    universe = align_many([a, *copies], AlignConfig(method="weight", classes=ALL))
    assert universe.report["config"]["classes"]["qk"] == "rotary"
    surface = simplex_surface(*universe.aligned, load_data("shakespeare"), resolution=2, max_examples=4)
    assert max(surface.loss) - min(surface.loss) < 1e-4


def test_a_sweep_fits_its_rows_to_the_family(tmp_path):
    """An ablation row such as `weight (all)` is meant for any family: on a Llama its orthogonal QK
    maps become rotary ones (recorded in the cell's run); an unknown class is still refused."""
    from symalign.sweeps.grid import Grid, Row, parse_classes
    from symalign.sweeps.sweep import check_grid, row_classes

    row = Row("weight (all)", "weight", parse_classes("all", "test"), fits=True)
    grid = Grid(pairs=[("zoo:llama-shakespeare/0", "zoo:llama-shakespeare/1")], rows=[row], seeds=[0], name="t")
    assert check_grid(grid) and row_classes(grid.cells()[0])["qk"] == "rotary"
    written = Grid(pairs=grid.pairs, rows=[Row("written", "weight", parse_classes({"qk": "orthogonal"}, "t"))],
                   seeds=[0], name="t")
    with pytest.raises(SymalignError, match="rotary"):  # a table the user wrote is not quietly changed
        check_grid(written)
    bad = Grid(pairs=grid.pairs, rows=[Row("bad", "weight", (("qk", "spin"),))], seeds=[0], name="t")
    with pytest.raises(SymalignError, match="unknown symmetry class 'spin'"):
        check_grid(bad)
