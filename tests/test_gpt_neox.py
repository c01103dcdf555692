"""The GPT-NeoX family (Pythia): parallel residual, a fused QKV laid out per head, and RoPE on only
the first quarter of each head, read from one spec like every other family.

Function preservation under every admissible class, export and a plain reload run over random
GPT-NeoX configs in test_function_preservation (rotary fractions 1/4, 1/2, 1; parallel and
sequential). Here: what partial rotary admits and why each refusal is needed, and that weight,
activation and learned matching recover planted transforms."""

from __future__ import annotations

import pytest
import torch

from symalign.data import load_data
from symalign.data.text import char_tokenizer
from symalign.errors import InadmissibleError
from symalign.match.activation.capture import split_qkv
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.learned.latent import LatentElement
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.groups import Dense, rotary_matrix
from symalign.symmetry.random import random_orthogonal, random_transform
from symalign.symmetry.transform import Transform, apply_unchecked

TOL = 1e-4
ALL = {"mlp": "perm", "heads": "perm", "qk": "rotary", "vo": "orthogonal", "residual": "orthogonal"}


def neox(seed: int = 0, **options):
    options = dict(layers=2, width=64, heads=4, mlp=96, rotary=0.25, parallel=True) | options
    return canonicalize(random_model(tiny_config("gpt_neox", **options), seed=seed))


def gap(model, other, x) -> float:
    return (outputs(other, x) - outputs(model, x)).abs().max().item()


def bypass(model, transform: Transform):
    """The model under `transform` without the spec's admissibility check (to show a refusal is needed)."""
    return model.with_tensors(apply_unchecked(model.tensors, spec_of(model), transform))


def test_fused_qkv_layouts_round_trip_and_differ():
    x = torch.arange(2 * 24.0).reshape(2, 24)
    for layout in ("blocks", "per-head"):
        parts = split_qkv(x, 2, layout, dim=-1)
        assert all(p.shape == (2, 8) for p in parts)
        joined = (torch.cat(parts, -1) if layout == "blocks"  # the inverse, written out: each head's q, k, v in turn
                  else torch.stack([p.unflatten(-1, (2, 4)) for p in parts], -2).flatten(-3))
        assert torch.equal(joined, x)
    q = split_qkv(x, 2, "per-head", dim=-1)[0]
    assert torch.equal(q[0], torch.tensor([0, 1, 2, 3, 12, 13, 14, 15.0]))  # head 0's q, then head 1's


def test_spec_rotates_a_quarter_of_each_head_and_says_why_the_rest_is_refused():
    spec = spec_of(neox())
    qk = spec.spaces["layer.0.qk"]
    assert (qk.size, qk.count, qk.rotated) == (16, 4, 4)
    assert spec.spaces["residual"].fixes_ones  # LayerNorm: orthogonal maps keep the all-ones vector
    for cls in ("orthogonal", "invertible", "perm"):
        with pytest.raises(InadmissibleError, match="the first 4 of 16 dimensions"):
            spec.check_classes({"qk": cls})
    spec.check_classes(ALL | {"vo": "invertible"})
    spec.check_classes({"qk": "rescale"})
    assert AlignConfig(preset="all").for_spec(spec).classes["qk"] == "rotary"


def test_partial_rotary_refusals_are_needed():
    """A rotation across rotated and pass-through dimensions, and a rotary map pairing i with i + d/2
    over the whole head (right for full RoPE, wrong here), change the logits; a rotary map on the
    rotated quarter with any orthogonal map on the rest does not."""
    model = neox(seed=3)
    x = random_inputs(model, n=3, seed=1)
    g = torch.Generator().manual_seed(0)
    h, dh, r = model.dims.n_head, model.dims.d_head, 4
    angle = torch.rand(h, dh // 2, generator=g, dtype=torch.float64) * 6.28
    whole_head = rotary_matrix(torch.cos(angle), torch.sin(angle))
    refused = {
        "general QK rotation": Dense(random_orthogonal(dh, g, h), "orthogonal"),
        "rotary pairing over the whole head": Dense(whole_head, "rotary"),
    }
    for what, element in refused.items():
        assert gap(model, bypass(model, Transform({"layer.0.qk": element})), x) > 1e-2, what
    angle = torch.rand(h, r // 2, generator=g, dtype=torch.float64) * 6.28
    admitted = rotary_matrix(1.3 * torch.cos(angle), 1.3 * torch.sin(angle), random_orthogonal(dh - r, g, h))
    moved = transformed(model, Transform({"layer.0.qk": Dense(admitted, "rotary")}))
    assert gap(model, moved, x) < TOL
    assert (moved.tensors["layer.0.attn.q.weight"] - model.tensors["layer.0.attn.q.weight"]).abs().max() > 1e-2
    with pytest.raises(InadmissibleError, match="first 4 dimensions"):
        transformed(model, Transform({"layer.0.qk": Dense(whole_head, "rotary")}))


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel residual", "sequential"])
@pytest.mark.parametrize("classes", [ALL, ALL | {"qk": "rescale", "vo": "invertible"}], ids=["rotary", "rescale"])
def test_planted_transforms_are_recovered_by_weight_matching(parallel, classes):
    a = neox(seed=5, parallel=parallel)
    planted = random_transform(spec_of(a), classes, seed=6)
    b = transformed(a, planted)
    assert gap(a, b, random_inputs(a, n=2, seed=0)) < TOL
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert result.report.distance_before > 0.5
    assert result.report.distance_after < TOL, result.report.sweeps[-1]
    undone = result.transform.compose(planted, spec_of(a))
    for name in ("layer.1.heads", "layer.1.qk", "layer.1.vo", "residual"):
        m = undone[name].dense()
        assert (m - torch.eye(m.shape[-1], dtype=torch.float64)).abs().max() < 1e-3, name


@pytest.fixture(scope="module")
def text_neox(tmp_path_factory):
    """A random GPT-NeoX that reads the plays: saved with the character tokenizer."""
    folder = tmp_path_factory.mktemp("neox")
    tokenizer = char_tokenizer(load_data("shakespeare").text)
    config = tiny_config("gpt_neox", layers=2, width=64, heads=4, mlp=96, vocab=len(tokenizer), context=64)
    save_model(random_model(config, seed=4), folder)
    tokenizer.save_pretrained(str(folder))
    return folder


def test_activation_matching_recovers_a_planted_transform(text_neox):
    """Activation matching splits the fused per-head QKV outputs into q and k."""
    a = canonicalize(load_model(text_neox))
    b = transformed(a, random_transform(spec_of(a), ALL, seed=7))
    result = align(a, b, AlignConfig(method="activation", classes=ALL, data="shakespeare", max_examples=16))
    assert result.report.distance_after < TOL


def test_learned_matching_trains_the_pass_through_block_and_keeps_the_function(text_neox):
    """The rotary latent has a second part, a rotation of the dimensions RoPE leaves alone, that receives
    gradients; a short learned run returns an admissible transform under which B keeps its function."""
    start = Dense(torch.eye(16, dtype=torch.float64).expand(4, 16, 16).clone(), "rotary")
    latent = LatentElement(start, "rotary", residual=False, rotated=4)
    element = latent.element().dense()
    element[:, 6, 9].sum().backward()  # an entry of the pass-through block
    assert latent.free is not None and latent.free.grad.abs().max() > 0
    a = canonicalize(load_model(text_neox))
    b = transformed(a, random_transform(spec_of(a), ALL, seed=7))
    result = align(a, b, AlignConfig(method="learned", classes=ALL, data="shakespeare", steps=3, batch_size=4))
    x = random_inputs(a, n=2, seed=0)
    assert gap(b, result.aligned, x) < TOL
    assert all(el.kind == "rotary" for name, el in result.transform.items() if name.endswith(".qk"))


def test_an_uploaded_pythia_zip_is_accepted_and_aligns_against_the_zoo(tmp_path):
    """A zipped zoo Pythia is imported like any upload; weight matching with `all` fitted to it
    (rotary QK maps on the rotated quarter) lowers the README's barrier (0↔1: none 0.98, weight 0.40)."""
    from tests.upload_support import upload_and_align

    uploaded, run = upload_and_align("zoo:pythia-shakespeare/0", "zoo:pythia-shakespeare/1", "my-pythia", tmp_path)
    assert uploaded.family.name == "gpt_neox" and uploaded.dims.rotary_dims == 8
    report = run.alignment.report
    assert report.config["classes"]["qk"] == "rotary" and report.function_gap_vs_b < TOL
    assert run.curve.barrier < 0.75


def test_a_pythia_by_hub_id_with_its_real_layout_loads_in_bf16_and_aligns(tmp_path, monkeypatch):
    """Pythia-160M's config (rotary_pct 0.25, parallel residual, untied head) at 2 layers × 64, bf16,
    stored the way the hub's Pythia checkpoints are (the head as `embed_out.weight`), in an offline
    hub cache: loaded by id, a quarter of each head rotary, aligned with `all`, exported in bf16."""
    from safetensors import safe_open

    from research.offline_hub import bpe_tokenizer, put_in_cache, real_config, write_checkpoint
    from symalign.data.text import shakespeare_text

    tokenizer = bpe_tokenizer(shakespeare_text()[:100_000], 300)
    config = real_config("pythia-160m", num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                         intermediate_size=128, vocab_size=len(tokenizer), max_position_embeddings=128)
    for i, name in enumerate("ab"):
        folder = write_checkpoint(config, tmp_path / name, seed=i, dtype=torch.bfloat16, tokenizer=tokenizer)
        with safe_open(str(folder / "model.safetensors"), "pt") as stored:
            assert "embed_out.weight" in stored.keys()  # transformers writes the hub's name for the head
        put_in_cache(folder, f"test-org/pythia-{name}", tmp_path / "hf")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    a = load_model("test-org/pythia-a")
    assert a.family.name == "gpt_neox" and a.dtype == torch.bfloat16 and a.dims.rotary_dims == 4
    assert (a.tensors["head.weight"] - a.tensors["embed.token"]).abs().max() > 0  # the untied head was read
    result = align(a, load_model("test-org/pythia-b"), AlignConfig(method="weight", preset="all"))
    assert result.report.config["classes"]["qk"] == "rotary" and result.report.function_gap_vs_b < 1e-3
    out = save_model(result.aligned, tmp_path / "aligned")
    assert load_model(out).dtype == torch.bfloat16
