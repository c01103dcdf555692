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
    seconds = {label: found[label].finished - found[label].created for label in DEMO_PARTS}
    before = (found[DEMO_PARTS[-1]].settings.get("config") or {}).get("steps")
    if before:
        seconds[DEMO_PARTS[-1]] *= steps / before
    return seconds
