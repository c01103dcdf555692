"""A run's unaligned twin in the history: the straight line between the same two models with no
alignment, which the λ panel shows beside the aligned path (issue #70: a grid records its vanilla
cells as `align` runs with method none, and the panel looked only for `barrier` runs)."""

from __future__ import annotations

from symalign.runs.store import Run


def is_vanilla(run: Run) -> bool:
    return run.kind == "barrier" or (run.kind == "align" and run.method == "none")


def _setting(run: Run) -> tuple:
    """What makes two curves of one pair comparable: the split and the λ grid."""
    return run.settings.get("split", "eval"), tuple((run.curve or {}).get("lambdas", ()))


def vanilla_twin(run: Run, history: list[Run]) -> Run | None:
    """The newest finished vanilla run with a curve between the same models (in order), measured on the same
    split and λ grid where the history has one, else on any: newest first, as `RunStore.list` gives them."""
    same_pair = [r for r in history if r.state == "done" and r.curve and is_vanilla(r) and r.id != run.id
                 and (r.model_a, r.model_b) == (run.model_a, run.model_b)]
    return next((r for r in same_pair if _setting(r) == _setting(run)), same_pair[0] if same_pair else None)


def looked_for(run: Run) -> str:
    """What the panel looked for, said when it found nothing."""
    return (f"no unaligned run of {run.model_a} ↔ {run.model_b} in the run history (a `barrier` run, or an align "
            f"run with method none, e.g. a grid's vanilla cell): `symalign barrier {run.model_a} {run.model_b}` "
            "records one")
