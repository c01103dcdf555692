"""Every admissible class on every component keeps the function, also after export and reload."""

from __future__ import annotations

import itertools

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageClassification, AutoModelForMaskedLM

from symalign.models import canonicalize, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.io import FAMILIES
from symalign.models.tiny import random_model, tiny_families
from symalign.symmetry.random import random_transform
from symalign.symmetry.spec import CLASSES, KINDS
from tests.conftest import PRE_NORM_FAMILIES, random_configs

TOL = 1e-4


def admissible_choices(spec) -> list[dict[str, str]]:
    """One transform per (kind, admissible class), plus a random mix of all kinds."""
    single = [{k: c} for k in KINDS for c in CLASSES if spec.spaces_of_kind(k) and spec.spaces_of_kind(k)[0].admits(c)]
    per_kind = {k: [c for c in CLASSES if spec.spaces_of_kind(k)[0].admits(c)] for k in spec.kinds()}
    mixes = [dict(zip(KINDS, combo)) for combo in itertools.islice(itertools.product(*per_kind.values()), 0, None, 7)]
    return single + mixes


@pytest.mark.parametrize("family", tiny_families())
@pytest.mark.parametrize("index", range(8))
def test_random_configs_every_class(family, index):
    config = random_configs(family, 8, seed=11)[index]
    model = canonicalize(random_model(config, seed=index))
    spec = spec_of(model)
    assert spec.canonical
    x = random_inputs(model, n=3, seed=index)
    reference = outputs(model, x)
    for j, classes in enumerate(admissible_choices(spec)):
        transform = random_transform(spec, classes, seed=j)
        result = transformed(model, transform)
        gap = (outputs(result, x) - reference).abs().max().item()
        assert gap < TOL, (classes, gap)
        identity = all(torch.equal(el.dense(), torch.eye(el.size, dtype=torch.float64).expand_as(el.dense()))
                       for el in transform.values())  # a small space can draw the identity permutation
        if not identity:
            moved = max((result.tensors[k] - model.tensors[k]).abs().max().item() for k in model.tensors)
            assert moved > 1e-2, f"{classes} left the weights unchanged: the test would prove nothing"


@pytest.mark.parametrize("family", PRE_NORM_FAMILIES)
def test_non_canonical_model_keeps_function_under_its_admissible_classes(family):
    for i, config in enumerate(random_configs(family, 4, seed=5)):
        model = random_model(config, seed=i)
        spec = spec_of(model)
        assert not spec.canonical
        x = random_inputs(model, n=2)
        reference = outputs(model, x)
        classes = spec.fit({"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "orthogonal", "residual": "perm"})
        result = transformed(model, random_transform(spec, classes, seed=i))
        assert (outputs(result, x) - reference).abs().max().item() < TOL


def _plain_load(path, family):
    """The checkpoint through transformers' Auto class for the family's task (no symalign code); a text tower,
    which no Auto class has a head for, through its own transformers class."""
    import transformers
    from transformers import AutoModelForSequenceClassification

    from symalign.models.io import FAMILIES

    if FAMILIES[family].task in ("text-embedding", "image-embedding"):
        return getattr(transformers, FAMILIES[family].hf_class_name).from_pretrained(str(path)).eval()
    auto = {"image-classification": AutoModelForImageClassification, "masked-lm": AutoModelForMaskedLM,
            "causal-lm": AutoModelForCausalLM,
            "sequence-classification": AutoModelForSequenceClassification}[FAMILIES[family].task]
    return auto.from_pretrained(str(path)).eval()


@pytest.mark.parametrize("family", tiny_families())
def test_export_reload_with_plain_transformers(family, tmp_path):
    for i, config in enumerate(random_configs(family, 3, seed=23)):
        original = random_model(config, seed=i)
        model = canonicalize(original)
        activation = config.to_dict().get("activation_function", config.to_dict().get("hidden_act"))
        classes = {"mlp": "scaled_perm" if activation == "relu" else "perm",
                   "heads": "perm", "qk": "invertible", "vo": "orthogonal", "residual": "orthogonal"}
        result = transformed(model, random_transform(spec_of(model), spec_of(model).fit(classes), seed=i))
        save_model(original, tmp_path / f"orig{i}")
        save_model(result, tmp_path / f"out{i}")
        x = random_inputs(model, n=3, seed=i)
        with torch.no_grad():
            field = FAMILIES[family].output  # logits, or a text tower's projected embedding
            before = getattr(_plain_load(tmp_path / f"orig{i}", family)(**x), field)
            after = getattr(_plain_load(tmp_path / f"out{i}", family)(**x), field)
        # relative to the logits' scale: Gemma 2's embeddings are scaled by √width and its logits reach ±5, where
        # float32 round-off through a random invertible QK map is 1e-4 absolute (2e-5 of the scale)
        scale = max(1.0, before.abs().max().item())
        assert (after - before).abs().max().item() < TOL * scale
        assert (after - outputs(original, x)).abs().max().item() < TOL * scale
