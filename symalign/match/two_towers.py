"""Aligning a two-tower pair (CLIPModel): each tower by weight matching, and the embedding space both
projections write by one map shared by the towers.

The towers share no hidden space but that embedding space, so the weight distance splits into the towers'
and the projections' terms, coupled only through the map E of the shared space (E acts on a projection's
output axis, a tower's transform on its input axis, so the two commute). Rounds alternate: the towers are
matched with B's projections taken through the current E, then E is re-solved from both projections at
once (orthogonal Procrustes, or an assignment), until a round no longer lowers the distance. An orthogonal E
keeps every cosine similarity between image and text embeddings, so the pair's logits are kept."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from symalign.errors import ArchitectureMismatchError, SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.solvers import assignment, procrustes
from symalign.match.weight.descent import distance
from symalign.models import canonicalize
from symalign.models.family import TransformerModel
from symalign.models.io import family_for, resolve
from symalign.models.towers import load_towers, save_towers, tower_config, two_towers_of

HEAD = "head.weight"  # each tower's projection: [shared space, the tower's residual]
MAX_ROUNDS = 5
TOL = 1e-6  # a round that lowers the distance by less than this (relative) ends the alignment
# The shared space's class follows the residual's: an orthogonal residual asked for, an orthogonal E.
SHARED_CLASS = {"orthogonal": "orthogonal", "perm": "perm", "scaled_perm": "perm", "none": "none"}


@dataclass
class TowersReport:
    """What `symalign align` prints for a pair of two-tower checkpoints."""

    towers: dict[str, dict] = field(default_factory=dict)  # per tower: classes, distances, sweeps
    shared_class: str = "none"
    rounds: int = 0
    distance_before: float = 0.0
    distance_after: float = 0.0
    function_gap_vs_b: float = 0.0
    seconds: float = 0.0


def shared_map(a: dict[str, TransformerModel], b: dict[str, TransformerModel], cls: str) -> torch.Tensor:
    """E minimising Σ over towers ‖A's projection − E · B's projection‖² in the class asked for."""
    corr = sum(a[n].tensors[HEAD].double() @ b[n].tensors[HEAD].double().T for n in a)
    if cls == "orthogonal":
        return procrustes(corr)
    eye = torch.eye(corr.shape[0], dtype=torch.float64)
    return eye[assignment(corr)] if cls == "perm" else eye


def _through(model: TransformerModel, e: torch.Tensor) -> TransformerModel:
    """The tower with its projection taken through E (the shared space's map)."""
    head = (e @ model.tensors[HEAD].double()).to(model.tensors[HEAD].dtype)
    return model.with_tensors({**model.tensors, HEAD: head})


def _total_distance(a: dict[str, TransformerModel], b: dict[str, TransformerModel]) -> float:
    merged_a = {f"{n}.{k}": v for n, m in a.items() for k, v in m.tensors.items()}
    return distance(merged_a, {f"{n}.{k}": v for n, m in b.items() for k, v in m.tensors.items()})


def check_towers_config(config: AlignConfig, measure: bool) -> None:
    """What a two-tower pair can be aligned by: weight matching, without a barrier (no paired data source)."""
    if config.method != "weight" or measure or config.data:
        raise SymalignError("a two-tower pair (CLIPModel) is aligned by weight matching only, tower by tower and "
                            "then the shared embedding space: barriers and data-driven matchers need paired "
                            "image-text data, which symalign does not load yet; drop --barrier/--data or use "
                            "--method weight")


def align_towers(a_path: str | Path, b_path: str | Path, config: AlignConfig, out: str | Path,
                 measure: bool = False) -> TowersReport:
    """B's towers and shared space brought into A's basis, written to `out` as a checkpoint of B's architecture."""
    check_towers_config(config, measure)
    start = time.perf_counter()
    kinds = two_towers_of(a_path), two_towers_of(b_path)
    if kinds[0] is None or kinds[0] != kinds[1]:
        raise ArchitectureMismatchError(f"{a_path} and {b_path} are not two checkpoints of one two-tower "
                                        "architecture")
    a = {n: canonicalize(m) for n, m in load_towers(a_path).items()}
    b = load_towers(b_path)
    report = TowersReport(shared_class=SHARED_CLASS.get(config.classes.get("residual", "none"), "none"),
                          distance_before=_total_distance(a, b))
    e = torch.eye(next(iter(a.values())).tensors[HEAD].shape[0], dtype=torch.float64)
    best, aligned = float("inf"), b
    for report.rounds in range(1, MAX_ROUNDS + 1):
        results = {n: align(a[n], _through(b[n], e), config) for n in a}
        step = shared_map(a, {n: r.aligned for n, r in results.items()}, report.shared_class)
        candidate = {n: _through(r.aligned, step) for n, r in results.items()}
        current = _total_distance(a, candidate)
        if current >= best * (1 - TOL):
            break
        best, aligned, e = current, candidate, step @ e
        report.towers = {n: {"classes": r.report.config["classes"], "distance_before": r.report.distance_before,
                             "distance_after": distance(a[n].tensors, candidate[n].tensors),
                             "sweeps": r.report.sweeps_run} for n, r in results.items()}
    report.distance_after = best
    save_towers(aligned, b_path, out)
    report.function_gap_vs_b = pair_function_gap(b_path, out)
    report.seconds = time.perf_counter() - start
    return report


@torch.no_grad()
def pair_function_gap(b_path: str | Path, out: str | Path, n: int = 3, seed: int = 0) -> float:
    """max |Δ logits_per_image| between two pair checkpoints on random images and texts, each loaded by
    plain transformers: what the alignment must keep."""
    import transformers

    pair = two_towers_of(b_path)
    cls = getattr(transformers, pair.architecture)
    before, after = (cls.from_pretrained(str(resolve(p)), dtype=torch.float32).eval() for p in (b_path, out))
    g = torch.Generator().manual_seed(seed)
    inputs = {}
    for tower in pair.towers:
        config = tower_config(before.config, pair, tower)
        inputs.update(family_for(config.model_type, config.architectures).random_inputs(config, n, g))
    return float((before(**inputs).logits_per_image - after(**inputs).logits_per_image).abs().max())
