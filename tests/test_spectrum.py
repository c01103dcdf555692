"""Eigen-angle spectra: exact on planted corrections (identity → 0; 2×2 rotations by known
angles → those angles), permutation stability counts what moved, the learned matcher keeps its
start so saved alignments can be analysed, and runs without learned rotations are refused."""

from __future__ import annotations

import json
import math

import pytest
import torch

from symalign.cli import main
from symalign.errors import SymalignError
from symalign.landscape.spectrum import alignment_spectrum, eigen_angles, spectrum
from symalign.match.config import CLASS_PRESETS
from symalign.models import canonicalize, spec_of
from symalign.models.tiny import random_model, tiny_config
from symalign.symmetry.groups import Dense, Permutation
from symalign.symmetry.random import orthogonal_fixing_ones, random_orthogonal, random_transform
from symalign.symmetry.transform import Transform

ANGLES = [0.1, 0.5, 1.0]


def rotations(n: int, angles: list[float]) -> torch.Tensor:
    """Block-diagonal 2×2 rotations by `angles`, identity elsewhere, in a random orthonormal basis."""
    m = torch.eye(n, dtype=torch.float64)
    for k, a in enumerate(angles):
        c, s = math.cos(a), math.sin(a)
        m[2 * k: 2 * k + 2, 2 * k: 2 * k + 2] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    basis = random_orthogonal(n, torch.Generator().manual_seed(n))
    return basis @ m @ basis.T


@pytest.fixture(scope="module")
def setting():
    model = canonicalize(random_model(tiny_config("gpt2", tied=False, width=32, heads=4), seed=1))
    spec = spec_of(model)
    return spec, random_transform(spec, CLASS_PRESETS["all"], seed=2)


def expected(n: int, angles: list[float]) -> list[float]:
    return sorted([0.0] * (n - 2 * len(angles)) + [a for a in angles for _ in range(2)])


def test_eigen_angles_of_planted_rotations_are_exact():
    assert eigen_angles(rotations(8, ANGLES)) == pytest.approx(expected(8, ANGLES), abs=1e-9)
    assert eigen_angles(torch.eye(5, dtype=torch.float64)) == pytest.approx([0.0] * 5, abs=1e-12)
    flip = torch.diag(torch.tensor([1.0, -1.0, -1.0], dtype=torch.float64))
    assert eigen_angles(flip) == pytest.approx([0.0, math.pi, math.pi], abs=1e-9)


def test_an_identity_correction_has_only_zero_angles(setting):
    spec, start = setting
    result = spectrum(start, start, spec)
    assert {c["kind"] for c in result["components"]} == {"residual", "qk", "vo"}
    assert max(a for c in result["components"] for a in c["angles"]) < 1e-6
    assert all(s["median"] < 1e-6 and s["share_below_0.1"] == 1.0 for s in result["summary"].values())
    assert all(v == 1.0 for v in result["permutation_stability"].values())
    assert set(result["permutation_stability"]) == {n for n, el in start.items() if isinstance(el, Permutation)}


def test_planted_corrections_return_exactly_their_angles(setting):
    spec, start = setting
    d = spec.spaces["residual"].size
    residual = orthogonal_fixing_ones(rotations(d - 1, ANGLES))
    head = torch.stack([rotations(8, ANGLES[:h + 1]) for h in range(4)])  # head h: the first h+1 angles
    correction = Transform({"residual": Dense(residual, "orthogonal"), "layer.1.qk": Dense(head, "orthogonal")})
    learned = correction.compose(start, spec)
    result = spectrum(learned, start, spec)
    by_space = {c["space"]: c for c in result["components"]}
    assert by_space["residual"]["angles"] == pytest.approx(expected(d - 1, ANGLES), abs=1e-8)
    for h in range(4):
        assert by_space["layer.1.qk"]["per_head"][h] == pytest.approx(expected(8, ANGLES[:h + 1]), abs=1e-8)
    assert max(by_space["layer.0.qk"]["angles"]) < 1e-6 and max(by_space["layer.1.vo"]["angles"]) < 1e-6


def test_permutation_stability_counts_the_entries_learning_moved(setting):
    spec, start = setting
    name = "layer.0.mlp"
    perm = start[name].perm.clone()
    perm[[0, 1, 2, 3]] = perm[[1, 0, 3, 2]]
    learned = Transform(dict(start, **{name: Permutation(perm)}))
    stability = spectrum(learned, start, spec)["permutation_stability"]
    assert stability[name] == pytest.approx(1 - 4 / perm.numel())
    assert stability["layer.1.mlp"] == 1.0


def test_a_saved_learned_alignment_is_analysed_from_its_folder(tmp_path, capsys):
    out = tmp_path / "learned"
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "learned", "--data", "digits",
                 "--classes", "all", "--steps", "30", "--out", str(out)]) == 0
    capsys.readouterr()
    html = tmp_path / "spectrum.html"
    assert main(["spectrum", str(out), "--json", "--html", str(html)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"components", "summary", "permutation_stability"} <= set(result)
    comp = {c["space"]: c for c in result["components"]}
    assert set(comp) == {"residual"} | {f"layer.{i}.{k}" for i in range(4) for k in ("qk", "vo")}
    assert len(comp["residual"]["angles"]) == 63 and comp["layer.0.qk"]["layer"] == 0
    assert all(0 <= a <= math.pi for c in result["components"] for a in c["angles"])
    assert set(result["summary"]) == {"residual", "qk", "vo"}
    assert all(set(s) >= {"median", "p90", "share_below_0.1"} for s in result["summary"].values())
    assert set(result["permutation_stability"]) == {f"layer.{i}.{k}" for i in range(4) for k in ("mlp", "heads")}
    assert html.is_file()


def test_runs_without_learned_rotations_are_refused(tmp_path, capsys):
    weight = tmp_path / "weight"
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--classes", "all", "--out", str(weight)]) == 0
    perms = tmp_path / "perms"
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "learned", "--data", "digits",
                 "--steps", "5", "--out", str(perms)]) == 0
    capsys.readouterr()
    for folder, message in [(weight, "no learned orthogonal element"), (perms, "no learned orthogonal element"),
                            (tmp_path / "missing", "no alignment directory"), (tmp_path, "no transforms.safetensors")]:
        html = tmp_path / "never.html"
        assert main(["spectrum", str(folder), "--html", str(html)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
        assert not html.exists()
    with pytest.raises(SymalignError, match="weight alignment"):
        alignment_spectrum(weight)


def test_an_rmsnorm_residual_correction_has_all_its_angles():
    """Under RMSNorm nothing fixes the all-ones direction: a planted rotation in the full residual
    comes back with all d angles (LayerNorm families report d − 1)."""
    model = canonicalize(random_model(tiny_config("llama", tied=False, width=32, heads=4, kv_heads=2), seed=1))
    spec = spec_of(model)
    start = random_transform(spec, spec.fit(CLASS_PRESETS["all"]), seed=2)
    correction = Transform({"residual": Dense(rotations(32, ANGLES), "orthogonal")})
    result = spectrum(correction.compose(start, spec), start, spec)
    (residual,) = [c for c in result["components"] if c["space"] == "residual"]
    assert residual["angles"] == pytest.approx(expected(32, ANGLES), abs=1e-8)
