"""One matrix over every family (the built-in data files, and a new Llama-like family added by one data file in
tests/families/): a random admissible transform keeps the function, weight matching recovers a planted one, an
uploaded checkpoint is recognised by its content and computes the same function, and an inadmissible class is
refused in one line. Plus the family-file loader's own refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from family_configs import random_configs

from symalign.errors import InadmissibleError, SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig, preset_classes
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.family_file import USER_FOLDERS, evaluate, families
from symalign.models.io import FAMILIES, checkpoint_zip
from symalign.models.tiny import random_model, tiny_config, tiny_families
from symalign.models.upload import import_upload
from symalign.symmetry.random import random_transform

HERE = Path(__file__).parent / "families"
NEW = "smollm3"  # tests/families/smollm3.toml: Llama's rows under another model type
TOL = 1e-4


@pytest.fixture(params=[*tiny_families(), NEW])
def family(request, monkeypatch) -> str:
    """A family key; the new family's data file registered for this test only."""
    if request.param == NEW:
        monkeypatch.setenv(USER_FOLDERS, str(HERE))
        (new,) = families(NEW)
        monkeypatch.setitem(FAMILIES, new.key, new)
    return request.param


def small(family: str, seed: int = 0):
    """A canonical small model of the family with an untied head (a tied one restricts nothing here)."""
    options = {"tied": False, "layers": 2}
    return canonicalize(random_model(tiny_config(family, **options), seed=seed))


def test_a_random_admissible_transform_keeps_the_function(family):
    model = small(family)
    spec = spec_of(model)
    x = random_inputs(model, n=3, seed=1)
    for seed, preset in enumerate(("permutations", "all", "full")):
        classes = {k: c for k, c in spec.fit(preset_classes(preset)).items() if c != "none"}
        moved = transformed(model, random_transform(spec, classes, seed=seed))
        gap = (outputs(moved, x) - outputs(model, x)).abs().max().item()
        assert gap < TOL, (preset, classes, gap)
        assert max((moved.tensors[k] - model.tensors[k]).abs().max().item() for k in model.tensors) > 1e-2


def test_weight_matching_recovers_a_planted_transform(family):
    """B = T(A) with every admissible class, the residual's included, on a varied small config of the family
    (grouped queries, biases, ties, experts, parallel residuals: tests/family_configs.py): weight matching lands
    on A and B's function is kept. RoPE families' rotary QK maps are solved to about 1e-5 on these tiny heads."""
    a = canonicalize(random_model(random_configs(family, 1, seed=21)[0], seed=0))
    spec = spec_of(a)
    classes = {k: c for k, c in spec.fit(preset_classes("all")).items() if c != "none"}
    b = transformed(a, random_transform(spec, classes, seed=3))
    result = align(a, b, AlignConfig(method="weight", classes=classes))
    assert result.report.distance_before > 0.2, result.report.distance_before
    assert result.report.distance_after < 1e-3 * result.report.distance_before, (classes, result.report.distance_after)
    x = random_inputs(a, n=2, seed=2)
    assert (outputs(result.aligned, x) - outputs(b, x)).abs().max().item() < TOL


def test_an_uploaded_checkpoint_is_recognised_and_keeps_its_function(family, tmp_path):
    model = small(family)
    folder = save_model(model, tmp_path / "saved", dtype="float32")
    imported = import_upload([("anything.bin", checkpoint_zip(folder))], tmp_path / "uploads", name="m")
    loaded = load_model(imported)
    assert loaded.family.key == model.family.key
    x = random_inputs(model, n=2, seed=4)
    assert (outputs(loaded, x) - outputs(model, x)).abs().max().item() < TOL


def test_an_inadmissible_class_is_refused_in_one_line(family):
    """Rotating MLP units is refused on every family (the elementwise nonlinearity commutes only with
    permutations), before any work, in one line that names the component."""
    model = small(family)
    with pytest.raises(InadmissibleError) as refused:
        align(model, model, AlignConfig(method="weight", classes={"mlp": "orthogonal"}))
    assert "mlp" in str(refused.value) and "\n" not in str(refused.value)


def test_the_new_family_is_one_data_file_and_reads_llamas_rows(monkeypatch):
    monkeypatch.setenv(USER_FOLDERS, str(HERE))
    (new,) = families(NEW)
    llama = FAMILIES["llama"]
    config = tiny_config("llama", kv_heads=2)
    assert new.name == NEW and new.hf_class_name == "SmolLM3ForCausalLM"
    assert [r.hf for r in new.weight_map(config)] == [r.hf for r in llama.weight_map(config)]
    assert new.spec(config, True).tensors == llama.spec(config, True).tensors


def test_family_file_expressions_read_the_config_and_refuse_what_is_not_data():
    config = tiny_config("gpt2", width=16, heads=2)
    assert evaluate("n_inner or 4 * n_embd", config) == config.n_inner
    assert evaluate("missing_field", config) is None
    for bad in ("config.__class__", "(lambda: 1)()"):
        with pytest.raises(ValueError, match="not allowed"):
            evaluate(bad, config)
    assert evaluate("open", config) is None  # no builtin but the few listed: a name is a config field


def test_a_missing_family_file_or_base_is_named(tmp_path, monkeypatch):
    (tmp_path / "orphan.toml").write_text('extends = "no_such_base"\nname = "orphan"\n[types]\norphan = "X"\n')
    monkeypatch.setenv(USER_FOLDERS, str(tmp_path))
    with pytest.raises(ValueError, match="no_such_base.toml"):
        families("orphan")


def test_a_family_file_refusal_is_one_line(monkeypatch):
    config = tiny_config("llama")
    config.hidden_act = "gelu"
    with pytest.raises(SymalignError, match=r"^unsupported llama layout: hidden_act 'gelu'"):
        FAMILIES["llama"].check_config(config)
    assert torch.is_tensor(random_model(tiny_config("llama"), seed=0).tensors["embed.token"])
