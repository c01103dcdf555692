"""Issue #74 item 3: a learned run that reached --steps while its check was still falling says so, with the
command that goes on; one that flattened out or stalled does not."""

from __future__ import annotations

from symalign.match.learned.checks import STILL_FALLING, learned_hint, still_falling
from symalign.match.results import LearnedStep, LearnedSummary


def run(checks: list[float], stopped: str = "reached --steps", every: int = 25):
    history = [LearnedStep(step=i * every, seconds=float(i), check=c) for i, c in enumerate(checks)]
    best = min(range(len(checks)), key=checks.__getitem__)
    summary = LearnedSummary(steps=(len(checks) - 1) * every, stopped=stopped, best_step=best * every,
                             start_check=checks[0], best_check=checks[best])
    return history, summary


# issue #74's code pair at 300 steps, its checks as recorded (every 25 steps)
CODE_PAIR_300 = [2.8625, 2.6065, 2.5705, 2.5563, 2.5507, 2.5348, 2.5298, 2.5211, 2.5089, 2.5017, 2.4936, 2.4904,
                 2.4895]


def test_a_run_still_falling_at_its_last_steps_says_so_with_the_longer_command():
    history, summary = run(CODE_PAIR_300)
    fall, share = still_falling(history, summary)
    assert abs(fall - (2.5089 - 2.4895)) < 1e-9 and share >= STILL_FALLING
    hint = learned_hint(history, summary)
    assert "still falling" in hint and "--steps 600" in hint


def test_a_flat_tail_a_stall_or_an_earlier_best_says_nothing():
    flat = [3.0, 2.5, 2.3, 2.2, 2.15, 2.12, 2.11, 2.105, 2.104, 2.1035, 2.1033, 2.1032, 2.1031]
    assert learned_hint(*run(flat)) is None  # the last third brought under 1% of the gain
    assert learned_hint(*run(CODE_PAIR_300, stopped="check stalled for 3 checks")) is None
    rising = CODE_PAIR_300[:-1] + [2.50]  # the best check was not the last one
    assert learned_hint(*run(rising)) is None
