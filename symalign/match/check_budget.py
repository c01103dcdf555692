"""The learned matcher's checks sized from the steps asked for (issue #58).

Checks are fixed-size forward passes (examples × points) taken every few steps; at the zoo's
300-600 steps they cost a tenth of the run, but a user who asks for 2 steps at GPT-2-small waited for
full-size checks (128 windows × 3 points ≈ 2 minutes on 2 cores) before and after them. Sized from the
budget, a short run gets short checks, with floors that keep the stopping rule meaningful; from 100
steps on the sizes are the old fixed ones, so the zoo's learned numbers (300-600 steps) did not move."""

from __future__ import annotations

FULL_EVERY, FULL_EXAMPLES = 25, 128  # the fixed sizes before: what runs of 300 steps or more still get
MIN_EVERY, MIN_EXAMPLES = 5, 16
MIDPOINT_BELOW = 50  # steps: shorter runs check λ = 0.5 only (a third of the path check's cost)


def budget_checks(steps: int) -> dict:
    """check_every, check_examples and check_points for a run of at most `steps` steps."""
    return {"check_every": min(FULL_EVERY, max(MIN_EVERY, steps // 4)),  # about four checks a short run
            "check_examples": min(FULL_EXAMPLES, max(MIN_EXAMPLES, 2 * steps)),
            "check_points": "midpoint" if steps < MIDPOINT_BELOW else "path"}
