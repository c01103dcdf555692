"""Issue #72's families as data: the weight map's reshapes read both ways, and what each new family
(Qwen3, Phi-3, OPT) adds beyond the property tests that run over every family (function kept under
every admissible class, export reloaded by plain transformers, planted recovery by weight matching:
test_function_preservation, test_weight_invariant): its refusals in one line with the reason, and
activation matching through its own hook points (Phi-3's fused q|k|v with unequal parts)."""

from __future__ import annotations

import pytest
import torch

from symalign.data import load_data
from symalign.data.text import char_tokenizer
from symalign.errors import ModelLoadError, SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig, preset_classes
from symalign.models import canonicalize, load_model, save_model, spec_of, transformed
from symalign.models.layout import Dims
from symalign.models.tiny import random_model, tiny_config
from symalign.models.weight_map import Row, from_logical, rearrange, to_logical
from symalign.symmetry.random import random_transform

TOL = 1e-4


def test_a_pattern_and_its_reverse_are_inverse_and_wrong_sizes_are_named():
    x = torch.randn(2 * 3 * 4, 5)
    y = rearrange(x, "(kv g dh) d -> d kv g dh", {"kv": 2, "g": 3})
    assert y.shape == (5, 2, 3, 4) and torch.equal(y[1, 1, 2], x.reshape(2, 3, 4, 5)[1, 2, :, 1])
    assert torch.equal(rearrange(y, "d kv g dh -> (kv g dh) d", {}), x)
    with pytest.raises(ValueError, match="does not split"):
        rearrange(torch.randn(7, 5), "(kv dh) d -> kv dh d", {"kv": 2})


def test_fused_rows_split_and_join_in_part_order():
    """Equal parts by the pattern's first axis (gate | up) and unequal ones by declared sizes (q | k | v
    with fewer key/value heads): to_logical then from_logical gives the state dict back exactly."""
    dims = Dims(1, 4, 8, 6, "silu", n_kv_head=2)  # 4 query heads of 2, 2 key/value heads
    qkv = ("h*dh", "kv*dh", "kv*dh")
    rows = [Row("attn.q.weight", "l.{i}.qkv", "(kv g dh) d -> kv g dh d", 0, qkv),
            Row("attn.k.weight", "l.{i}.qkv", "(kv dh) d -> kv dh d", 1, qkv),
            Row("attn.v.weight", "l.{i}.qkv", "(kv dh) d -> kv dh d", 2, qkv),
            Row("mlp.gate.weight", "l.{i}.gate_up", "(two m) d -> two m d", 0),
            Row("mlp.up.weight", "l.{i}.gate_up", "(two m) d -> two m d", 1)]
    sd = {"l.0.qkv": torch.randn(8 + 4 + 4, 8), "l.0.gate_up": torch.randn(12, 8)}
    logical = to_logical(rows, sd, dims)
    assert logical["layer.0.attn.q.weight"].shape == (2, 2, 2, 8)
    assert logical["layer.0.attn.k.weight"].shape == (2, 2, 8)
    assert torch.equal(logical["layer.0.mlp.up.weight"], sd["l.0.gate_up"][6:])
    back = from_logical(rows, logical, dims)
    assert all(torch.equal(back[k], v) for k, v in sd.items())


def test_qwen3_refuses_maps_inside_heads_and_keeps_the_rest():
    spec = spec_of(canonicalize(random_model(tiny_config("qwen3", kv_heads=2, head_dim=12), seed=0)))
    qk = spec.spaces["layer.0.qk"]
    assert qk.size == 12 and all("q_norm" in qk.refusals[c] for c in ("orthogonal", "rescale", "rotary", "perm"))
    assert not spec.spaces["layer.0.vo"].refusals.get("orthogonal") and not spec.spaces["residual"].refusals.get(
        "orthogonal")


def test_gemma2_sandwich_norms_leave_the_residual_its_permutations_only():
    model = random_model(tiny_config("gemma2", kv_heads=2), seed=0)
    residual = spec_of(model).spaces["residual"]
    assert "sandwich" in residual.refusals["orthogonal"] and "perm" not in residual.refusals
    assert canonicalize(model).tensors.keys() == model.tensors.keys()  # nothing to fold: the model as it is
    assert all(torch.equal(canonicalize(model).tensors[k], v) for k, v in model.tensors.items())


def test_opt_refuses_post_ln_in_one_line(tmp_path):
    config = tiny_config("opt")
    config.do_layer_norm_before = False
    save_model(random_model(tiny_config("opt"), seed=0), tmp_path / "pre")
    (tmp_path / "pre" / "config.json").write_text((tmp_path / "pre" / "config.json").read_text().replace(
        '"do_layer_norm_before": true', '"do_layer_norm_before": false'))
    with pytest.raises((ModelLoadError, SymalignError), match="post-LN"):
        load_model(tmp_path / "pre")


@pytest.mark.parametrize("family, options", [
    ("phi3", dict(kv_heads=2, rotary=0.5)),  # fused q|k|v of unequal parts, hooked as one output
    ("opt", dict(embed_dim=16)),  # project_in/out
    ("qwen3", dict(kv_heads=2, head_dim=12)),  # a head size of its own
    ("gemma2", dict(kv_heads=2, head_dim=12, window=4)),  # sandwich norms, sliding layers, soft-capping
])
def test_planted_transforms_are_recovered_by_activation_matching(family, options, tmp_path):
    tokenizer = char_tokenizer(load_data("shakespeare").text)
    config = tiny_config(family, layers=2, width=32, heads=4, mlp=48, tied=False, vocab=len(tokenizer), context=64,
                         **options)
    save_model(random_model(config, seed=5), tmp_path / family)
    tokenizer.save_pretrained(str(tmp_path / family))
    a = canonicalize(load_model(tmp_path / family))
    classes = {k: c for k, c in spec_of(a).fit(preset_classes("all")).items() if c != "none"}
    b = transformed(a, random_transform(spec_of(a), classes, seed=6))
    result = align(a, b, AlignConfig(method="activation", classes=classes, data="shakespeare", max_examples=16))
    assert result.report.distance_after < TOL, (family, classes, result.report.distance_after)


def test_inspect_prints_the_weight_map_with_each_axis_space(tmp_path, capsys):
    from symalign.cli import main

    save_model(random_model(tiny_config("phi3", kv_heads=2), seed=0), tmp_path / "phi3")
    assert main(["inspect", str(tmp_path / "phi3"), "--layout"]) in (0, None)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "attn.k.weight" in x)
    assert "qkv_proj.weight" in line and "part 1 of h*dh|kv*dh|kv*dh" in line and "qk:contra" in line


def test_distilbert_planted_transforms_are_recovered_from_masked_text_and_its_streams_are_read(tmp_path):
    """DistilBERT reads the masked-LM plays through its own names; its residual streams (Verma's relabelling)
    are read after its norms, which are modules of their own here."""
    from symalign.merge.verma_relabellings import attention_streams

    tokenizer = char_tokenizer(load_data("shakespeare-mlm").text, mask=True)
    config = tiny_config("distilbert", layers=2, width=32, heads=4, mlp=48, tied=True, vocab=len(tokenizer),
                         context=64)
    save_model(random_model(config, seed=2), tmp_path / "distil")
    tokenizer.save_pretrained(str(tmp_path / "distil"))
    a = load_model(tmp_path / "distil")
    planted = {"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "orthogonal", "residual": "perm"}
    b = transformed(a, random_transform(spec_of(a), planted, seed=8))
    result = align(a, b, AlignConfig(method="activation", classes=planted, data="shakespeare-mlm", max_examples=16))
    assert result.report.distance_after < TOL
    streams = attention_streams(a, load_data("shakespeare-mlm"), max_examples=4)
    assert sorted(streams) == [f"stream.{j}" for j in range(5)]
    gamma, beta = (a.tensors[f"layer.0.ln1.{p}"].double() for p in ("weight", "bias"))
    normed = (streams["stream.1"] - beta) / gamma  # sa_layer_norm's output undone: mean 0, variance 1 per row
    assert normed.mean(-1).abs().max() < 1e-4 and (normed.var(-1, unbiased=False) - 1).abs().max() < 1e-2


@pytest.mark.parametrize("family, qk", [("mixtral", "rotary"), ("olmoe", "none"), ("qwen2_moe", "rotary")])
def test_planted_expert_and_unit_permutations_are_recovered_exactly_by_weight_matching(family, qk):
    """Mixtral, OLMoE and Qwen2-MoE (a shared expert beside the routed ones): experts reordered with their
    router rows and each expert's units permuted on their own, on top of every other class (OLMoE's q/k norm
    across heads leaves QK nothing; its gains move with the heads); weight matching recovers all of it,
    and leaving the experts out cannot."""
    a = canonicalize(random_model(tiny_config(family, kv_heads=2, experts=4), seed=0))
    spec = spec_of(a)
    assert spec.kinds()[-1] == "experts" and spec.spaces["layer.0.mlp"].batched_by == "layer.0.experts"
    classes = {"experts": "perm", "mlp": "perm", "heads": "perm", "residual": "orthogonal", "qk": qk,
               "vo": "orthogonal"}
    classes = {k: c for k, c in classes.items() if c != "none"}
    planted = random_transform(spec, classes, seed=1)
    assert not torch.equal(planted["layer.0.experts"].perm, torch.arange(4))
    b = transformed(a, planted)
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert result.report.distance_after < 1e-5
    without = align(a, b, AlignConfig(method="weight", classes={**classes, "experts": "none"}))
    assert without.report.distance_after > 0.1


def test_a_mixture_of_experts_refuses_activation_matching_and_other_families_hide_the_experts_kind():
    a = random_model(tiny_config("mixtral"), seed=0)
    with pytest.raises(SymalignError, match="activation matching of a mixture of experts"):
        align(a, a, AlignConfig(method="activation", preset="all", data="shakespeare", max_examples=4))
    assert "experts" not in spec_of(random_model(tiny_config("llama"), seed=0)).kinds()
    refusal = spec_of(a).spaces["layer.0.experts"].refusals["orthogonal"]
    assert "router rows" in refusal


def test_experts_follow_the_mlp_class_unless_named():
    spec = spec_of(random_model(tiny_config("mixtral"), seed=0))
    assert spec.with_experts({"mlp": "perm"})["experts"] == "perm"
    assert spec.with_experts({"mlp": "none"})["experts"] == "none"
    assert spec.with_experts({"mlp": "perm", "experts": "none"})["experts"] == "none"
    dense = spec_of(random_model(tiny_config("llama"), seed=0))
    assert dense.with_experts({"mlp": "perm"}) == {"mlp": "perm"}
    config = AlignConfig(method="weight", preset="permutations").for_spec(spec)
    assert config.classes["experts"] == "perm" and "experts" not in AlignConfig(preset="all").classes


def test_clip_vision_tower_admits_residual_permutations_only_and_matches_on_digits(tmp_path):
    """CLIP's pre_layrnorm writes the stream's first value and the head reads the stream unnormalised: the
    residual admits permutations only (with the reason), every class inside heads stays; activation matching
    on digits recovers a planted transform through CLIP's own hook points; CLIPModel (two towers) is refused."""
    import json

    a = random_model(tiny_config("clip", layers=2, width=32, heads=4, mlp=48), seed=3)
    spec = spec_of(a)
    assert "pre_layrnorm" in spec.spaces["residual"].refusals["orthogonal"]
    assert not spec.spaces["layer.0.qk"].refusals.get("invertible") and not spec.spaces["layer.0.mlp"].refusals.get(
        "perm")
    assert canonicalize(a).tensors["embed.norm.weight"].equal(a.tensors["embed.norm.weight"])  # nothing folded
    planted = {"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "orthogonal", "residual": "perm"}
    b = transformed(a, random_transform(spec, planted, seed=4))
    result = align(a, b, AlignConfig(method="activation", classes=planted, data="digits", max_examples=32))
    assert result.report.distance_after < TOL
    save_model(a, tmp_path / "clip")
    config = json.loads((tmp_path / "clip" / "config.json").read_text())
    (tmp_path / "clip" / "config.json").write_text(json.dumps({**config, "architectures": ["CLIPModel"]}))
    with pytest.raises(ModelLoadError, match="two towers"):
        load_model(tmp_path / "clip")


def test_deberta_is_refused_with_why(tmp_path):
    """Issue #72: DeBERTa-v2 (Zhang et al.'s model) is not built; the refusal names why."""
    from symalign.models.io import family_for

    with pytest.raises(ModelLoadError, match="disentangled attention"):
        family_for("deberta-v2", ["DebertaV2ForMaskedLM"])


def test_olmoe_norm_across_heads_refuses_maps_inside_heads_and_moves_with_the_heads():
    a = random_model(tiny_config("olmoe", kv_heads=2), seed=0)
    spec = spec_of(a)
    assert all("OLMoE" in spec.spaces["layer.0.qk"].refusals[c] for c in ("perm", "orthogonal", "rescale"))
    assert [t.space for t in spec.tensors["layer.0.attn.q_norm.weight"] if t] == ["layer.0.heads", "layer.0.qheads"]
    with pytest.raises(ModelLoadError, match="clip_qkv"):
        from symalign.models.io import FAMILIES

        config = tiny_config("olmoe")
        config.clip_qkv = 8.0
        FAMILIES["olmoe"].check_config(config)


def test_qwen2_moe_shared_expert_is_its_own_mlp_space_and_dense_layers_are_refused():
    spec = spec_of(random_model(tiny_config("qwen2_moe", shared=24), seed=0))
    shared = spec.spaces["layer.0.shared"]
    assert shared.kind == "mlp" and shared.size == 24 and shared.batched_by is None
    assert spec.with_experts({"mlp": "perm"}) == {"mlp": "perm", "experts": "perm"}  # shared units follow the mlp
    from symalign.models.io import FAMILIES

    config = tiny_config("qwen2_moe")
    config.mlp_only_layers = [1]
    with pytest.raises(ModelLoadError, match="dense layers"):
        FAMILIES["qwen2_moe"].check_config(config)


def test_clip_text_tower_aligns_without_data_and_refuses_what_needs_a_loss(tmp_path, capsys):
    """CLIP's text tower (CLIPTextModelWithProjection): its final norm folds into the projection, so the residual
    admits orthogonal maps (Q·1 = 1) in canonical form; a planted transform of every class is recovered by
    weight matching through the command line without data, and the aligned checkpoint gives the same
    projected embedding in plain transformers. Anything that needs a loss is one line saying so, and the tower
    without its projection (whose output is the residual stream itself) is refused with why."""
    import json

    from transformers import CLIPTextModelWithProjection

    from symalign.cli import main
    from symalign.models import outputs, random_inputs

    a = canonicalize(random_model(tiny_config("clip_text_model", layers=2, width=32, heads=4, mlp=48), seed=5))
    spec = spec_of(a)
    assert spec.spaces["residual"].admits("orthogonal") and spec.spaces["residual"].fixes_ones
    b = transformed(a, random_transform(spec, preset_classes("all"), seed=6))  # what `--classes all` solves for
    save_model(a, tmp_path / "a")
    save_model(b, tmp_path / "b")
    assert main(["align", str(tmp_path / "a"), str(tmp_path / "b"), "--method", "weight", "--classes", "all",
                 "--out", str(tmp_path / "out"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["distance_after"] < TOL < report["distance_before"]
    x = random_inputs(a, 3, seed=2)
    aligned = load_model(tmp_path / "out")
    assert max((aligned.tensors[n] - a.tensors[n]).abs().max().item() for n in a.tensors) < 1e-3
    plain = CLIPTextModelWithProjection.from_pretrained(str(tmp_path / "out")).eval()
    with torch.no_grad():
        assert (plain(**x).text_embeds - outputs(b, x)).abs().max().item() < TOL
    for data in ("shakespeare", "digits"):
        with pytest.raises(SymalignError, match="no task loss"):
            load_data(data).check_model(a)
    assert main(["barrier", str(tmp_path / "a"), str(tmp_path / "b"), "--data", "shakespeare"]) == 2
    err = capsys.readouterr().err
    assert "no task loss" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    (tmp_path / "a" / "config.json").write_text(json.dumps({**config, "architectures": ["CLIPTextModel"]}))
    with pytest.raises(ModelLoadError, match="text_projection"):
        load_model(tmp_path / "a")


def _clip_pair_checkpoint(folder, seed: int):
    """A small CLIPModel (the two towers of the clip_vision_model and clip_text_model tests) with every weight
    random, norms included, saved by plain transformers."""
    from transformers import CLIPConfig, CLIPModel

    vision, text = tiny_config("clip_vision_model", layers=2, width=32, heads=4, mlp=48), tiny_config(
        "clip_text_model", layers=2, width=24, heads=2, mlp=40)
    config = CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(), projection_dim=16)
    config.architectures = ["CLIPModel"]
    torch.manual_seed(seed)
    model = CLIPModel(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(str(folder))
    return folder


def test_a_clip_model_pair_is_aligned_tower_by_tower_and_in_its_shared_space(tmp_path, capsys):
    """Issue #72: CLIPModel as a pair of towers with their projections. B is A with a planted transform in each
    tower (`all`: the vision residual permuted, the text residual rotated, maps inside heads) and a planted
    rotation of the shared embedding space on both projections; `symalign align` recovers all of it (every
    tensor back to A's canonical form) and writes a CLIPModel that plain transformers loads with B's logits.
    Without the shared map the distance stays: the projections carry the rotation."""
    import json

    from transformers import CLIPModel

    from symalign.cli import main
    from symalign.match.two_towers import HEAD, shared_map
    from symalign.models.towers import load_towers, save_towers

    a_dir = _clip_pair_checkpoint(tmp_path / "a", seed=0)
    a = {n: canonicalize(m) for n, m in load_towers(a_dir).items()}
    e = torch.linalg.qr(torch.randn(16, 16, generator=torch.Generator().manual_seed(9), dtype=torch.float64))[0]
    b = {}
    for i, (n, m) in enumerate(a.items()):
        planted = transformed(m, random_transform(spec_of(m), spec_of(m).fit(preset_classes("all")), seed=10 + i))
        b[n] = planted.with_tensors({**planted.tensors, HEAD: (e @ planted.tensors[HEAD].double()).float()})
    assert spec_of(a["vision"]).spaces["residual"].admits("perm") and not spec_of(a["vision"]).spaces[
        "residual"].admits("orthogonal")
    assert spec_of(a["text"]).spaces["residual"].admits("orthogonal")
    save_towers(b, a_dir, tmp_path / "b")
    assert torch.allclose(shared_map(a, a, "orthogonal"), torch.eye(16, dtype=torch.float64), atol=1e-6)

    assert main(["align", str(a_dir), str(tmp_path / "b"), "--classes", "all", "--out", str(tmp_path / "out"),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["distance_after"] < TOL < 0.1 < report["distance_before"]
    assert report["function_gap_vs_b"] < TOL and report["shared_class"] == "orthogonal"
    aligned = load_towers(tmp_path / "out")
    for n in a:
        assert max((aligned[n].tensors[k] - a[n].tensors[k]).abs().max().item() for k in a[n].tensors) < 1e-3, n
    g = torch.Generator().manual_seed(3)
    x = {"pixel_values": torch.randn(3, 1, 8, 8, generator=g), "input_ids": torch.randint(2, 61, (3, 7), generator=g)}
    x["input_ids"][:, -1] = 1
    with torch.no_grad():
        out = CLIPModel.from_pretrained(str(tmp_path / "out")).eval()(**x)
        ref = CLIPModel.from_pretrained(str(tmp_path / "b")).eval()(**x)
    assert (out.logits_per_image - ref.logits_per_image).abs().max().item() < TOL

    assert main(["align", str(a_dir), str(tmp_path / "b"), "--classes", "permutations", "--out",
                 str(tmp_path / "perm"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distance_after"] > 0.05  # a rotation no permutation undoes
    assert main(["align", str(a_dir), str(tmp_path / "b"), "--barrier", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "paired image-text data" in err and "Traceback" not in err
