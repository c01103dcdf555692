"""How far two models of one architecture are apart: in function (logits on random inputs: 0 to float
error for a symmetry) and in weights (relative change over the logical tensors)."""

from __future__ import annotations

from symalign.models import outputs, random_inputs
from symalign.models.family import TransformerModel


def function_gap(a: TransformerModel, b: TransformerModel, n: int = 4, seed: int = 0) -> float:
    """Max absolute logit difference on random inputs: 0 (to float error) for the same function."""
    x = random_inputs(a, n, seed)
    return float((outputs(a, x) - outputs(b, x)).abs().max())


def relative_change(a: TransformerModel, b: TransformerModel) -> float:
    """‖θ_b − θ_a‖ / ‖θ_a‖ over all logical tensors."""
    num = sum(float((b.tensors[k].double() - v.double()).pow(2).sum()) for k, v in a.tensors.items())
    den = sum(float(v.double().pow(2).sum()) for v in a.tensors.values())
    return (num / den) ** 0.5 if den else 0.0
