"""TransFusion's Fig. 5 on the zoo (issue #107): every row's path starts at A and ends at B's own function (each
alignment is applied as a symmetry), and the figure's three claims are decided per pair by the one rule; the
paper's "OT and Git Re-Basin do not preserve functional equivalence" is therefore contradicted here, and said."""

from __future__ import annotations

from symalign.papers import TABLES
from symalign.sweeps.transfusion_fig5 import ROWS, fig5_curves, fig5_text


def test_every_row_keeps_bs_function_and_the_claims_are_decided():
    curves = fig5_curves("vit-digits", seeds=[0, 1], points=3, max_examples=32)
    assert list(curves) == [label for label, _ in ROWS]
    start = curves["vanilla"][0]["loss"][0]
    own = curves["vanilla"][0]["loss"][-1]
    for label, runs in curves.items():
        (run,) = runs
        assert abs(run["loss"][0] - start) < 1e-5, label  # λ = 0 is A on every row
        assert abs(run["loss"][-1] - own) < 1e-4, label  # the aligned end is B's function
    moved = {label: runs[0]["loss"][1] for label, runs in curves.items()}
    assert len({round(v, 6) for v in moved.values()}) > 1, "the alignments must differ at the midpoint"
    text = fig5_text(curves)
    for claim in TABLES["transfusion-fig5"].claims:
        line = next(ln for ln in text.splitlines() if claim.quote in ln)
        assert any(word in line for word in ("agrees", "contradicted", "not separable")), line
    lost = next(ln for ln in text.splitlines() if "do not preserve functional equivalence" in ln)
    assert "contradicted (the other way on every pair: 0 of 2" in lost
