"""After a learned run that used all its steps: whether its check was still falling when it stopped.

The stall rule ends a run whose check has stopped improving; a run that reaches `--steps` first may
have had more to give. Issue #74's code pair closed 94.0% of its barrier at 300 steps, 94.4% at the
600-step default and 96.9% in 1,450 steps with `--classes full` (docs/matching.md): a user at the
default could not tell from the output. So the run
says when the check improved by a real share of the run's whole gain over its last third, and which
command goes on, instead of choosing a longer default for every pair."""

from __future__ import annotations

from symalign.match.results import LearnedStep, LearnedSummary

TAIL = 1 / 3  # the last third of the steps
# A share of the run's whole gain (start check − best check) the last third still brought. Issue #74's pair: 5.2% at
# 300 steps and 4.6% at the 600-step default, and a 1,500-step run (--classes full) went on from 94.4% closed to
# 96.9%; so 2%, which the 600-step run passes.
STILL_FALLING = 0.02


def still_falling(history: list[LearnedStep], summary: LearnedSummary) -> tuple[float, float] | None:
    """(the check's fall over the last third of the steps, that fall as a share of the run's gain), when the
    run reached --steps with its best check at its end and that share is at least STILL_FALLING; else None."""
    checks = [(h.step, h.check) for h in history if h.check is not None]
    if summary.stopped != "reached --steps" or len(checks) < 3 or summary.best_step != checks[-1][0]:
        return None
    gain = (summary.start_check or 0.0) - (summary.best_check or 0.0)
    if gain <= 0:
        return None
    cut = checks[-1][0] * (1 - TAIL)
    before = min((c for s, c in checks if s <= cut), default=checks[0][1])
    fall = before - checks[-1][1]
    return (fall, fall / gain) if fall / gain >= STILL_FALLING else None


def learned_hint(history: list[LearnedStep], summary: LearnedSummary) -> str | None:
    """One sentence for a run that stopped while still improving, with the command that goes on."""
    found = still_falling(history, summary)
    if found is None:
        return None
    fall, share = found
    steps = summary.steps
    return (f"the check was still falling when the run reached --steps {steps} (−{fall:.4f} over its last "
            f"{round(steps * TAIL)} steps, {100 * share:.0f}% of the run's gain): a longer run may close more; "
            f"run again with --steps {2 * steps}")
