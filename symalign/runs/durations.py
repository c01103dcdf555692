"""How long work took here before: the estimate a page gives before a run and the count-down its
progress shows, from one source, the run history (issue #43: three pages said "about 15 s",
"about a minute" and "about 20 s" for the same demo, and none matched what it then took).

A run's duration is its `finished - created` on this machine; the newest finished run of each
label stands for it. Reads only the run database (no torch), so a page can show it on its first
paint."""

from __future__ import annotations

from symalign.runs.store import Run, RunStore

DEMO_PARTS = ("demo: no alignment", "demo: weight matching", "demo: learned matching")


def last_runs(store: RunStore, labels: tuple[str, ...], model_a: str, model_b: str) -> dict[str, Run]:
    """The newest finished run of each label for this pair (labels never run are absent)."""
    found: dict[str, Run] = {}
    for run in store.list(model=model_a):  # newest first
        if (run.label in labels and run.label not in found and run.model_a == model_a and run.model_b == model_b
                and run.state == "done" and run.finished):
            found[run.label] = run
    return found


def demo_estimate(store: RunStore, recipe: str, steps: int) -> dict[str, float] | None:
    """Seconds each part of the guided demo will take, from its last computation here, the learned part
    scaled to `steps` (its time is its steps); None until the demo has run once on this machine."""
    found = last_runs(store, DEMO_PARTS, f"zoo:{recipe}/0", f"zoo:{recipe}/1")
    if len(found) < len(DEMO_PARTS):
        return None
    seconds = {label: took(found[label]) for label in DEMO_PARTS}
    scaled = at_steps(found[DEMO_PARTS[-1]], steps)
    if scaled is not None:
        seconds[DEMO_PARTS[-1]] = scaled
    return seconds


def last_run(store: RunStore, kind: str, *, method: str | None = None, model_a: str | None = None,
             model_b: str | None = None, settings: dict | None = None) -> Run | None:
    """The newest finished run of `kind` here (of `method`, on the pair, with these top-level settings):
    the run whose duration a page quotes before it starts the same work again."""
    for run in store.list(kind=kind, method=method, model=model_a):  # newest first
        if run.state != "done" or not run.finished:
            continue
        if model_a is not None and run.model_a != model_a or model_b is not None and run.model_b != model_b:
            continue
        if all(run.settings.get(k) == v for k, v in (settings or {}).items()):
            return run
    return None


def took(run: Run | None, scale: float = 1.0) -> float | None:
    """A run's duration here in seconds (`scale`: e.g. the steps asked over the steps it ran)."""
    return None if run is None else (run.finished - run.created) * scale


def estimate_text(seconds: float | None, typical: str) -> str:
    """What a page says before a run: the time the same work took here last, else the typical figure,
    said to be one (never a number passed off as measured here)."""
    if seconds is None:
        return f"typically {typical} on 2 CPU cores; not yet run here"
    return f"{seconds:.0f} s here last time" if seconds < 90 else f"{seconds / 60:.1f} min here last time"


def learned_estimate(store: RunStore, model_a: str, model_b: str, steps: int) -> float | None:
    """A learned alignment of this pair at `steps`, from the newest one here (its time is its steps)."""
    run = last_run(store, "align", method="learned", model_a=model_a, model_b=model_b)
    return None if run is None else at_steps(run, steps)


def at_steps(run: Run, steps: int) -> float | None:
    """A learned run's time scaled to `steps` (its time is its steps); None when it ran at the data's
    default (its steps are not recorded, so no scale is known)."""
    before = (run.settings.get("config") or {}).get("steps")
    return took(run, steps / before) if before else None


def simplex_estimate(store: RunStore, model: str, methods: tuple[str, ...]) -> float | None:
    """Simplex surfaces for `methods` on models led by `model`: the newest run of each, summed (None
    unless every method ran here)."""
    runs = [last_run(store, "simplex", method=m, model_a=model) for m in methods]
    return None if any(r is None for r in runs) else sum(took(r) for r in runs)


# Simplex surfaces on vit-digits, 2 CPU cores, the page's defaults (resolution 10, all examples): the seconds
# one method's surface took (issue #56 measured 403 s for none, weight and learned together, where the page
# said "about 40 s": the learned part is its steps). Learned and soft are per 100 steps.
SIMPLEX_TYPICAL = {"none": 15.0, "weight": 25.0, "learned": 60.0, "soft": 60.0}
LEARNERS = ("learned", "soft")


def simplex_typical(methods: tuple[str, ...], steps: int) -> tuple[float, str]:
    """(seconds, sentence) for Simplex's defaults where this machine has no history: each method's
    typical time, the learners' scaled to `steps`, and what takes the time when it is minutes."""
    seconds = sum(SIMPLEX_TYPICAL.get(m, 25.0) * (steps / 100 if m in LEARNERS else 1) for m in methods)
    slow = [m for m in methods if m in LEARNERS]
    text = f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"
    if slow and seconds >= 90:
        text += (f" for vit-digits (the {' and '.join(slow)} part runs {steps} steps, about "
                 f"{SIMPLEX_TYPICAL['learned'] * steps / 100 / 60:.0f} min each; fewer steps cut it in proportion)")
    return seconds, text


# One sweep cell on the zoo's models, 2 CPU cores, 21 points on the whole evaluation split: seconds by
# method (issue #56: `quick` on vit-digits took 78 s for its 9 cells where the page said "about 20 s";
# learned cells at the data's default steps).
CELL_TYPICAL = {"none": 6.0, "weight": 12.0, "activation": 12.0, "learned": 80.0, "soft": 80.0}


def sweep_typical(methods: list[str]) -> tuple[float, str]:
    """(seconds, sentence) for a grid of cells with these methods (one entry per cell), where this machine
    has no history of it: the sum of typical cells, saying what takes the time when it is minutes."""
    seconds = sum(CELL_TYPICAL.get(m, 12.0) for m in methods)
    learned = sum(m in ("learned", "soft") for m in methods)
    text = f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"
    if learned and seconds >= 90:
        text += f" ({learned} learned cell{'s' * (learned > 1)}, about {CELL_TYPICAL['learned']:.0f} s each)"
    return seconds, text
