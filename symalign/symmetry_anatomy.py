"""What a symmetry does to the weights, for teaching (the Symmetries page): which tensors each
component kind acts on and how, which classes a kind refuses and why, a symmetry planted in one
component kind (the weights move, the predictions do not), and any logical tensor as a matrix."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from symalign.models import canonicalize, outputs, spec_of, transformed
from symalign.models.compare import function_gap, relative_change
from symalign.models.family import TransformerModel
from symalign.symmetry.random import random_transform
from symalign.symmetry.spec import CLASSES, SymmetrySpec
from symalign.symmetry.transform import Transform

VARIANCE_TEXT = {"co": "rows (G·W)", "contra": "columns (W·G⁻¹)", "diag": "elementwise gain"}


def action_grid(spec: SymmetrySpec, layer: int = 0) -> tuple[list[str], list[list[str]]]:
    """Rows: the embedding/head tensors and layer `layer`'s; columns: the spec's kinds; a cell says how that
    kind's group element reaches the tensor ('co', 'contra', 'diag') or '' when it does not."""
    names = [n for n in spec.tensors if not n.startswith("layer.") or n.startswith(f"layer.{layer}.")]
    cells = []
    for name in names:
        row = {kind: "" for kind in spec.kinds()}
        for tag in spec.tensors[name]:
            if tag is not None:
                row[spec.spaces[tag.space].kind] = tag.variance
        cells.append([row[k] for k in spec.kinds()])
    return names, cells


def class_table(spec: SymmetrySpec) -> list[dict[str, str]]:
    """One row per component kind: for each class, 'admissible' or the spec's reason to refuse it."""
    rows = []
    for kind in spec.kinds():
        refusals = spec.kind_refusals(kind)
        rows.append({"component": kind, **{cls: refusals.get(cls, "admissible") for cls in CLASSES}})
    return rows


def refusal_lines(spec: SymmetrySpec) -> list[str]:
    """The refusals as a reader takes them in: one line per component kind, with how many components of the kind
    the model has, and each reason once after the classes it refuses (one sentence per class repeated the same
    reason six times for a model's heads)."""
    lines = []
    for kind in spec.kinds():
        count = len(spec.spaces_of_kind(kind))
        by_reason: dict[str, list[str]] = {}
        for cls in CLASSES:
            reason = spec.kind_refusals(kind).get(cls)
            if reason is not None:
                by_reason.setdefault(reason, []).append(cls)
        components = f"{count} component{'s' if count != 1 else ''}"
        if by_reason:
            lines.append(f"**{kind}** ({components}): " + " · ".join(f"*{', '.join(classes)}*: {reason}"
                                                                     for reason, classes in by_reason.items()))
    return lines


def admissible_classes(spec: SymmetrySpec, kind: str) -> list[str]:
    refusals = spec.kind_refusals(kind)
    return [cls for cls in CLASSES if cls not in refusals]


@dataclass
class PlantedSymmetry:
    """A (canonical) and T(A) for a random T acting on one component kind only."""

    original: TransformerModel
    planted: TransformerModel
    transform: Transform
    function_gap: float  # max |Δ logit| between A and T(A) on random inputs
    weight_change: float  # ‖T(A) − A‖ / ‖A‖

    def moved(self, tensor: str) -> float:
        """Relative change of one tensor."""
        a, b = self.original.tensors[tensor].double(), self.planted.tensors[tensor].double()
        return float((b - a).norm() / a.norm().clamp_min(1e-12))


def plant(model: TransformerModel, kind: str, cls: str, seed: int = 0) -> PlantedSymmetry:
    """Plant a random element of `cls` on every space of component `kind` (refused with the spec's
    reason when inadmissible). Done on the canonical form, where every admissible class exists."""
    original = canonicalize(model)
    transform = random_transform(spec_of(original), {kind: cls}, seed=seed)
    planted = transformed(original, transform)
    return PlantedSymmetry(original, planted, transform, function_gap(original, planted),
                           relative_change(original, planted))


def tensors_touched(spec: SymmetrySpec, kind: str, layer: int = 0) -> list[str]:
    """The tensors of layer `layer` (and outside the layers) that `kind` acts on: what to look at."""
    names, cells = action_grid(spec, layer)
    column = spec.kinds().index(kind)
    return [n for n, row in zip(names, cells) if row[column]]


def as_matrix(t: torch.Tensor) -> torch.Tensor:
    """A logical tensor as a 2-D matrix for a heat map: head-split tensors get their (heads, d_head)
    axes merged back ([heads, d_head, d] → [heads·d_head, d]; [d, heads, d_head] → [d, heads·d_head]:
    the head pair is the end with the smaller outer axis); vectors become one row."""
    t = t.detach().double().cpu()
    if t.dim() == 1:
        return t[None]
    if t.dim() >= 3:  # grouped queries add a group axis: [H_kv, g, d_head, d] → [H_kv·g·d_head, d]
        return t.reshape(-1, t.shape[-1]) if t.shape[0] <= t.shape[-1] else t.reshape(t.shape[0], -1)
    return t.reshape(t.shape[0], -1)


def predictions(model: TransformerModel, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(predicted index, its probability) per example; for text, at each sequence's last position."""
    logits = outputs(model, inputs)
    if logits.dim() == 3:
        logits = logits[:, -1]
    probs = torch.softmax(logits.double(), dim=-1)
    p, index = probs.max(dim=-1)
    return index, p
