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
    """A run's duration here in seconds, as on an idle machine (divided by the load it recorded: the page
    scales by today's), `scale`: e.g. the steps asked over the steps it ran."""
    from symalign.runs.load import idle_seconds

    return None if run is None else idle_seconds(run.finished - run.created, run.metrics or {}) * scale


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def estimate_text(seconds: float | None, typical: str, load=None, typical_seconds: float | None = None) -> str:
    """What a page says before a run: the time the same work took here last, else the typical figure,
    said to be one (never a number passed off as measured here). `load` (symalign.runs.load.Load): on a busy
    machine the figure is scaled by how much slower it runs now, and says so (issue #70)."""
    busy = load is not None and load.busy
    now = (f" (this machine is {load.factor:.1f}× slower than idle now"
           + (f", load average {load.load_average:.1f}" if load.load_average is not None else "") + ")") if busy else ""
    if seconds is None:
        if busy and typical_seconds:
            return (f"about {_span(typical_seconds * load.factor)} on this machine now, typically {typical} on 2 idle "
                    f"CPU cores{now}; not yet run here")
        return f"typically {typical} on 2 CPU cores; not yet run here"
    if busy:
        return f"about {_span(seconds * load.factor)} on this machine now; {_span(seconds)} here last time{now}"
    return f"{_span(seconds)} here last time"


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


# Typical seconds on 2 idle CPU cores where this machine has no history, measured on vit-digits by
# benchmarks/estimates.py (2026-11-27, docs/benchmarks.md; a machine shared with other work is slower,
# and its own history then sets the estimate). Learned and soft figures are per 100 steps: their time
# is their steps.
SIMPLEX_TYPICAL = {"none": 3.0, "weight": 4.0, "learned": 8.0, "soft": 8.0}  # one method's surface
CELL_TYPICAL = {"none": 1.0, "weight": 1.5, "activation": 1.5, "learned": 6.0, "soft": 6.0}  # a curve's cell
LEARNERS = ("learned", "soft")
# Another zoo family costs this many times vit-digits: (closed-form matching and evaluation, learning per
# step). gpt-shakespeare's model and evaluation windows are larger: Ablations' quick grid took 112 s against
# 11 s, a learned Align at 100 steps 77 s against 6 s, the demo 122 s against 15 s, Simplex 165 s against
# 15 s (benchmarks/estimates.py, 2 idle cores, 2026-11-27). A model outside the zoo is quoted at
# vit-digits' figures and said to be so.
FAMILY_COST = {"vit-digits": (1.0, 1.0), "gpt-shakespeare": (9.0, 14.0)}


def family_of_ref(ref: str | None) -> str | None:
    """The zoo family of a reference (`zoo:gpt-shakespeare/1` -> gpt-shakespeare), else None."""
    if not ref or not ref.startswith("zoo:"):
        return None
    name = ref[len("zoo:"):].split("/")[0]
    return name if name in FAMILY_COST else None


def _cost(method: str, steps: int, table: dict[str, float], family: str | None) -> float:
    per = table.get(method, table["weight"])
    evaluation, learning = FAMILY_COST.get(family or "vit-digits", (1.0, 1.0))
    return per * (steps / 100 * learning if method in LEARNERS else evaluation)


def _said(seconds: float, family: str | None, why: str = "") -> str:
    text = f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"
    text += f" for {family}" if family else " for a zoo-sized model"
    return text + (f" ({why})" if why and seconds >= 90 else "")


def simplex_typical(methods: tuple[str, ...], steps: int, family: str | None = "vit-digits") -> tuple[float, str]:
    """(seconds, sentence) for Simplex's surfaces where this machine has no history: each method's typical
    surface, the learners' scaled to `steps`, and what takes the time when it is minutes."""
    seconds = sum(_cost(m, steps, SIMPLEX_TYPICAL, family) for m in methods)
    slow = [m for m in methods if m in LEARNERS]
    why = (f"the {' and '.join(slow)} part runs {steps} steps, about "
           f"{_cost('learned', steps, SIMPLEX_TYPICAL, family) / 60:.0f} min each; fewer steps cut it in proportion"
           if slow else "")
    return seconds, _said(seconds, family, why)


def sweep_typical(methods: list[str], family: str | None = "vit-digits", steps: int = 600) -> tuple[float, str]:
    """(seconds, sentence) for a grid of cells with these methods (one entry per cell; learned cells at
    `steps`, the data's default), where this machine has no history of it."""
    seconds = sum(_cost(m, steps, CELL_TYPICAL, family) for m in methods)
    learned = sum(m in LEARNERS for m in methods)
    why = (f"{learned} learned cell{'s' * (learned > 1)}, about {_cost('learned', steps, CELL_TYPICAL, family):.0f} s "
           "each" if learned else "")
    return seconds, _said(seconds, family, why)


def align_typical(method: str, family: str | None, steps: int, with_vanilla: bool = False) -> tuple[float, str]:
    """(seconds, sentence) for an alignment with its barrier (and the vanilla barrier), no history here."""
    seconds = _cost(method, steps, CELL_TYPICAL, family) + (_cost("none", 0, CELL_TYPICAL, family) if with_vanilla
                                                            else 0.0)
    why = f"learned matching runs {steps} steps; fewer steps cut it in proportion" if method in LEARNERS else ""
    return seconds, _said(seconds, family, why)


def align_estimate(store: RunStore, method: str, model_a: str, model_b: str, steps: int,
                   with_vanilla: bool = False) -> float | None:
    """The same alignment of this pair from the newest one here (a learner's scaled to `steps`), with the
    pair's last vanilla barrier when it is asked again (None without that history)."""
    run = last_run(store, "align", method=method, model_a=model_a, model_b=model_b)
    if run is None:
        return None
    seconds = at_steps(run, steps) if method in LEARNERS else took(run)
    if seconds is None:
        return None
    if with_vanilla:
        vanilla = last_run(store, "barrier", method="none", model_a=model_a, model_b=model_b)
        if vanilla is None:
            return None
        seconds += took(vanilla)
    return seconds


def demo_typical(recipe: str, steps: int) -> tuple[float, str]:
    """(seconds, sentence) for the guided demo's second part where it never ran here: a vanilla barrier,
    weight matching with its barrier, and learned matching at `steps` with its barrier."""
    seconds = sum(_cost(m, steps, CELL_TYPICAL, recipe) for m in ("none", "weight", "learned"))
    return seconds, _said(seconds, recipe, f"the learned part runs {steps} steps; fewer steps cut it in proportion")


# The papers' tables on their first zoo family with every evaluation example (`symalign paper KEY --run`,
# 2 CPU cores, measured once on 2026-12-04 with other work beside it, load average 2-4: figures to plan by,
# on the high side): (family, seconds).
PAPER_TYPICAL: dict[str, tuple[str, float]] = {
    "theus-table1": ("vit-digits", 300.0), "zhang-table2": ("vit-digits", 36.0), "zhang-fig3": ("vit-digits", 27.0),
    "verma-table1": ("bert-shakespeare", 190.0), "verma-table2": ("bert-shakespeare", 155.0),
    "verma-fig3": ("bert-shakespeare", 110.0), "transfusion-table3": ("vit-digits", 18.0),
    "transfusion-fig4": ("vit-digits", 35.0), "zhang-fig4": ("vit-digits", 9.0), "zhang-fig5": ("vit-digits", 18.0),
    "theus-fig6": ("vit-digits", 38.0), "transfusion-fig5": ("vit-digits", 20.0),
    "transfusion-table1": ("vit-digits", 34.0),  # measured beside another job
    "zhang-table1": ("bert-shakespeare-genre", 28.0), "transfusion-table2": ("bert-shakespeare", 40.0),
    "verma-table3": ("bert-shakespeare-genre", 35.0), "transfusion-table4": ("vit-digits", 55.0),
    "zhang-fig6": ("bert-shakespeare-genre", 20.0),
    "theus-fig5": ("vit-digits", 370.0)}  # twelve learned runs, measured beside another job: an upper figure


def paper_typical(key: str, family: str) -> tuple[float | None, str]:
    """(seconds, sentence) for a paper table where this machine has no run of it with these settings; on
    another family than the one measured, scaled by that family's evaluation cost."""
    if key not in PAPER_TYPICAL:
        return None, "unknown (not measured)"
    measured, seconds = PAPER_TYPICAL[key]
    scale = FAMILY_COST.get(family, (1.0, 1.0))[0] / FAMILY_COST.get(measured, (1.0, 1.0))[0]
    return seconds * scale, _said(seconds * scale, family)
