"""Eigen-angle spectra of the corrections a learned (or soft) matcher made to its weight-matching start.

For every orthogonal element (the residual map, each head's QK and VO maps) the correction is
C = O_learned · O_startᵀ, taken as the group element T_learned ∘ T_start⁻¹ so that a head
permutation learning changed is accounted for. C is orthogonal; its eigenvalues are e^{±iθ}
and the angles θ ∈ [0, π] say how far learning rotated each plane (0: not at all). Theus et
al. find them clustered near 0: learning makes small corrections to weight matching.
On the residual, C fixes the all-ones direction by construction (LayerNorm's condition), so
that one eigenvalue (always 1) is left out: the angles describe the d − 1 free directions.

Permutation stability: for each permutation space (MLP units, heads), the share of entries that
learning left where weight matching put them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from symalign.errors import SymalignError
from symalign.json_files import read_json_object
from symalign.symmetry.groups import Permutation
from symalign.symmetry.random import ones_complement_basis
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, load_transforms

ORTHOGONAL_KINDS = ("residual", "qk", "vo")


def eigen_angles(matrix: torch.Tensor) -> list[float]:
    """|arg λ| ∈ [0, π] of every eigenvalue of an orthogonal matrix, ascending (a rotation by θ
    in one plane gives θ twice: its eigenvalues e^{+iθ} and e^{−iθ})."""
    values = torch.linalg.eigvals(matrix.to(torch.float64))
    return sorted(float(a) for a in values.angle().abs().clamp(max=np.pi))


def correction(learned: Transform, start: Transform, spec: SymmetrySpec) -> Transform:
    """C with learned = C ∘ start."""
    return learned.compose(start.inverse(spec), spec)


def _layer(space: str) -> int | None:
    return int(space.split(".")[1]) if space.startswith("layer.") else None


def _summary(angles: list[float]) -> dict:
    a = np.asarray(angles)
    return {"median": float(np.median(a)), "p90": float(np.percentile(a, 90)),
            "share_below_0.1": float((a < 0.1).mean()), "count": int(a.size)}


def spectrum(learned: Transform, start: Transform, spec: SymmetrySpec, classes: dict[str, str] | None = None) -> dict:
    """Eigen-angles per orthogonal component, summaries per kind, permutation stability.

    `classes` (kind -> class, from the run's settings) says which elements were orthogonal; per-head
    permutations are stored as orthogonal matrices too, but they are not rotations."""
    fix = correction(learned, start, spec)
    components = []
    for name, element in sorted(fix.items(), key=lambda kv: (_layer(kv[0]) is not None, _layer(kv[0]) or 0, kv[0])):
        space = spec.spaces[name]
        if space.kind not in ORTHOGONAL_KINDS or (classes or {}).get(space.kind, "orthogonal") != "orthogonal":
            continue
        if element.kind != "orthogonal":
            continue
        m = element.dense()
        if space.fixes_ones:  # LayerNorm: the all-ones direction is fixed by construction, not learned
            basis = ones_complement_basis(m.shape[-1]).to(m)
            m = (basis.T @ m @ basis)[1:, 1:]
        stack = m if m.dim() == 3 else m[None]
        per_head = [eigen_angles(block) for block in stack]
        components.append({"space": name, "kind": space.kind, "layer": _layer(name),
                           "angles": sorted(a for head in per_head for a in head),
                           "per_head": per_head if m.dim() == 3 else None})
    if not components:
        raise SymalignError("this alignment has no learned orthogonal element (no residual, QK or VO map was "
                            "learned as orthogonal); spectra need --method learned or soft with an orthogonal class")
    kinds = sorted({c["kind"] for c in components}, key=ORTHOGONAL_KINDS.index)
    summary = {k: _summary([a for c in components if c["kind"] == k for a in c["angles"]]) for k in kinds}
    stability = {}
    for name, element in learned.items():
        first = start.get(name)
        if isinstance(element, Permutation) and isinstance(first, Permutation):
            stability[name] = float((element.perm == first.perm).double().mean())
    return {"components": components, "summary": summary, "permutation_stability": stability}


def alignment_spectrum(directory: str | Path) -> dict:
    """The spectrum of a saved alignment: a directory `symalign align` wrote, one member of an
    `align-many` output (DIR/1, ...), or the whole `align-many` output (every aligned member)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SymalignError(f"no alignment directory at {directory}")
    report = _report(directory)
    if report.get("kind") == "universe":
        members = [alignment_spectrum(Path(d)) for d in report.get("outputs", [])[1:]]
        if not members:
            raise SymalignError(f"{directory} is a universe alignment without aligned members")
        components = [dict(c, model=i + 1) for i, m in enumerate(members) for c in m["components"]]
        kinds = sorted({c["kind"] for c in components}, key=ORTHOGONAL_KINDS.index)
        return {"alignment": str(directory), "method": members[0]["method"], "classes": members[0]["classes"],
                "components": components,
                "summary": {k: _summary([a for c in components if c["kind"] == k for a in c["angles"]]) for k in kinds},
                "permutation_stability": {f"model {i + 1}: {name}": v for i, m in enumerate(members)
                                          for name, v in m["permutation_stability"].items()}}
    transform_file = directory / "transforms.safetensors"
    if not transform_file.is_file():
        raise SymalignError(f"{directory} holds no transforms.safetensors: pass a directory that "
                            "`symalign align` or `symalign align-many` wrote")
    learned, start = load_transforms(transform_file)
    config = report.get("config", {})
    if report.get("role") == "reference":
        raise SymalignError(f"{directory} is the universe's reference model, which is not transformed; pass an "
                            "aligned member (…/1, …/2) or the align-many output folder itself")
    if start is None:
        method = config.get("method", "this method")
        raise SymalignError(f"{directory} is a {method} alignment with no learned orthogonal element: spectra need "
                            "a learned or soft alignment, which keeps its weight-matching start")
    from symalign.models.io import read_config

    family, hf_config = read_config(directory)
    spec = family.spec(hf_config, canonical=True)
    out = spectrum(learned, start, spec, config.get("classes"))
    out.update({"alignment": str(directory), "method": config.get("method"), "classes": config.get("classes")})
    return out


def _report(directory: Path) -> dict:
    path = directory / "alignment.json"
    if not path.is_file():
        return {}
    return read_json_object(path)
