"""Small summaries shared by the CLI and the app: the spec as a table, and how far two models'
functions and weights are apart."""

from __future__ import annotations

from symalign.models import TransformerModel, outputs, random_inputs
from symalign.symmetry.spec import CLASSES, SymmetrySpec


def spec_table(model: TransformerModel, spec: SymmetrySpec, canonical: bool) -> dict:
    """The spec as plain data: one row per component with its admissible classes and reasons."""
    d = model.dims
    return {
        "family": spec.family,
        "hf_class": model.family.hf_class_name,
        "canonical": canonical,
        "dims": {"n_layer": d.n_layer, "n_head": d.n_head, "d_head": d.d_head, "d_model": d.d_model,
                 "d_mlp": d.d_mlp, "activation": d.activation, "n_kv_head": d.kv_heads, "norm": d.norm,
                 "rope": d.rope, "gated_mlp": d.gated},
        "components": [
            {"name": s.name, "kind": s.kind, "size": s.size, "count": s.count,
             "admissible": [c for c in CLASSES if s.admits(c)], "reasons": dict(s.refusals)}
            for s in spec.spaces.values()
        ],
    }


def function_gap(a: TransformerModel, b: TransformerModel, n: int = 4, seed: int = 0) -> float:
    """Max absolute logit difference on random inputs: 0 (to float error) for the same function."""
    x = random_inputs(a, n, seed)
    return float((outputs(a, x) - outputs(b, x)).abs().max())


def relative_change(a: TransformerModel, b: TransformerModel) -> float:
    """‖θ_b − θ_a‖ / ‖θ_a‖ over all logical tensors."""
    num = sum(float((b.tensors[k].double() - v.double()).pow(2).sum()) for k, v in a.tensors.items())
    den = sum(float(v.double().pow(2).sum()) for v in a.tensors.values())
    return (num / den) ** 0.5 if den else 0.0


def with_section(report: str, section: str) -> str:
    """The report with the section of `section`'s heading (its first line) replaced by it (appended when
    the report has none)."""
    heading = section.split("\n", 1)[0]
    start = report.find(heading)
    if start < 0:
        return report.rstrip("\n") + "\n\n" + section
    end = report.find("\n## ", start + len(heading))
    return report[:start] + section + (report[end:] if end >= 0 else "")
