"""The Symmetries page's science: which tensors each component kind acts on, refusals with their
reasons, and planted symmetries that move exactly the weights they should and keep predictions."""

from __future__ import annotations

import pytest
import torch

from symalign.errors import InadmissibleError
from symalign.models import canonicalize, load_model, random_inputs, spec_of
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.spec import KINDS
from symalign.symmetry_anatomy import (
    action_grid,
    admissible_classes,
    as_matrix,
    class_table,
    plant,
    predictions,
    tensors_touched,
)


@pytest.fixture(scope="module")
def vit():
    return load_model("zoo:vit-digits/0")


def test_the_action_grid_reads_the_spec_tags():
    spec = spec_of(canonicalize(random_model(tiny_config("gpt2", layers=2, width=16, heads=4), seed=0)))
    names, cells = action_grid(spec, layer=1)
    row = dict(zip(KINDS, cells[names.index("layer.1.attn.q.weight")]))
    assert row == {"mlp": "", "heads": "co", "qk": "co", "vo": "", "residual": "contra"}
    assert dict(zip(KINDS, cells[names.index("layer.1.attn.k.weight")]))["qk"] == "contra"
    assert dict(zip(KINDS, cells[names.index("layer.1.ln1.weight")]))["residual"] == "diag"
    assert not any(n.startswith("layer.0.") for n in names) and "embed.token" in names


def test_the_class_table_gives_the_specs_reasons(vit):
    spec = spec_of(canonicalize(vit))
    table = {row["component"]: row for row in class_table(spec)}
    assert table["mlp"]["perm"] == "admissible" and "gelu" in table["mlp"]["orthogonal"]
    assert table["residual"]["orthogonal"] == "admissible" and "LayerNorm" in table["residual"]["invertible"]
    assert admissible_classes(spec, "heads") == ["perm"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_symmetry_moves_only_its_weights_and_keeps_the_predictions(vit, kind):
    spec = spec_of(canonicalize(vit))
    x = random_inputs(vit, n=8)
    for cls in admissible_classes(spec, kind):
        planted = plant(vit, kind, cls, seed=1)
        assert planted.function_gap < 1e-4, (kind, cls)
        touched = set(tensors_touched(spec, kind, layer=0))
        assert max(planted.moved(t) for t in touched) > 0.05, (kind, cls)  # visibly different weights
        untouched = [n for n in planted.original.tensors if n.startswith("layer.0.") and n not in touched]
        assert all(torch.equal(planted.original.tensors[n], planted.planted.tensors[n]) for n in untouched)
        index_a, p_a = predictions(planted.original, x)
        index_t, p_t = predictions(planted.planted, x)
        assert torch.equal(index_a, index_t) and torch.allclose(p_a, p_t, atol=1e-5)


def test_planting_an_inadmissible_class_is_refused_with_the_reason(vit):
    with pytest.raises(InadmissibleError, match="gelu"):
        plant(vit, "mlp", "orthogonal")


def test_as_matrix_flattens_head_split_tensors_and_vectors():
    assert as_matrix(torch.zeros(4, 8, 32)).shape == (32, 32)
    assert as_matrix(torch.zeros(32, 4, 8)).shape == (32, 32)
    assert as_matrix(torch.zeros(7)).shape == (1, 7)


def test_refusals_are_one_line_per_kind_with_the_component_count_and_each_reason_once(vit):
    """The Symmetries page's list: one line per component kind (the heads refuse six classes for one reason: it
    is said once, after the classes), with how many components of the kind the model has."""
    from symalign.symmetry_anatomy import refusal_lines

    spec = spec_of(vit)
    lines = refusal_lines(spec)
    assert [line.split("**")[1] for line in lines] == [k for k in spec.kinds() if spec.kind_refusals(k)]
    for line, kind in zip(lines, (k for k in spec.kinds() if spec.kind_refusals(k))):
        assert f"({len(spec.spaces_of_kind(kind))} component" in line
        for reason in set(spec.kind_refusals(kind).values()):
            assert line.count(reason) == 1, (kind, reason)
        assert all(cls in line for cls in spec.kind_refusals(kind))
