"""After a long weight-matching run: where a looser stopping rule would have ended it, and what that
would have saved. At real scale on a CPU most of the time goes to sweeps that barely move the
distance (GPT-2-small: the 12 sweeps after the third, each improving it by less than 0.1%, took 132 of 172 s), yet the
default stays 1e-5 because on the zoo a looser rule moved the barrier by up to 11%
(docs/benchmarks.md, issue #58). So the run says what the user could trade, instead of choosing."""

from __future__ import annotations

from symalign.match.results import SweepRecord

LOOSE = 1e-3  # the minute-scale setting measured at GPT-2-small (3 sweeps there)
WORTH_SECONDS = 30.0  # below this the sweeps a looser rule skips are not worth a sentence


def looser_stop(sweeps: list[SweepRecord], tol: float) -> SweepRecord | None:
    """The sweep after which `--min-improvement tol` would have stopped this run (weight.py's rule: the
    first sweep improving the distance by less than `tol` of the sweep before), or None when no sweep
    before the last would have."""
    start = [s for s in sweeps if s.sweep == 0]
    runs = start[-1:] + [s for s in sweeps if s.sweep > 0]
    for before, after in zip(runs, runs[1:]):
        if after.distance > before.distance * (1 - tol):
            return after if after is not runs[-1] else None
    return None


def stop_hint(sweeps: list[SweepRecord], tol: float = LOOSE, worth_seconds: float = WORTH_SECONDS) -> str | None:
    """One sentence on the time a looser rule would save, when it would save at least `worth_seconds`."""
    hint = looser_stop(sweeps, tol)
    if hint is None or not sweeps:
        return None
    total, last = sweeps[-1].seconds, sweeps[-1].distance
    saved = total - hint.seconds
    if saved < worth_seconds:
        return None
    gap = 100 * (hint.distance - last) / last if last > 0 else 0.0
    later = sweeps[-1].sweep - hint.sweep
    return (f"sweep {hint.sweep} improved the distance by less than {tol:g}; the {later} sweep{'s' * (later > 1)} "
            f"after it took {saved:.0f} of {total:.0f} s: --min-improvement {tol:g} stops after sweep {hint.sweep} "
            f"(distance +{gap:.3f}%; on the zoo that moved the barrier by up to 11%: docs/benchmarks.md)")
