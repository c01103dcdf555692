"""Estimate against actual (issue #56): what the pages say before a run, and what the run then took, for
the guided demo, Simplex's defaults, Ablations' `quick` grid and a learned Align, on both zoo families.

    python -m benchmarks.estimates [--families vit-digits gpt-shakespeare] [--steps N] [--only demo simplex …]

Two passes, each task in a fresh data folder (so nothing is reused, not even the demo's vanilla
barrier by Align): the first is estimated as a new
machine's pages estimate it (no history: the typical figures of symalign.runs.durations, scaled by
family and steps), the second from the first pass's history (what a page says the next time). Each
task runs through the job function the app's worker calls, so the work is the page's. Prints a table
of estimate, actual and their ratio; the goal is a ratio within 0.5-2. `--steps` sets learned
matching's steps in the demo, Simplex and Align (the estimates scale with them); the `quick` grid runs
at its own defaults.

`--beside` runs everything beside a 2-thread torch job (another process multiplying matrices), as a busy
shared machine: the estimates are then scaled by the load probe the pages use (symalign.runs.load), as they
are on a page (issue #70). The table gives the probe's factor per task."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from symalign.data import learned_defaults
from symalign.match.config import AlignConfig, preset_classes
from symalign.runs import durations
from symalign.runs.load import current_load
from symalign.runs.store import RunStore
from symalign.sweeps.grid import preset_grid
from symalign.train.recipes import DEMO_DATA

TASKS = ("demo", "simplex", "quick", "align")


class Quiet:
    """A job's progress callback that shows nothing (the table is the output)."""

    def __call__(self, *args) -> None:
        pass

    def landed(self, run_id: str) -> None:
        pass


def requests(family: str, steps: int) -> dict[str, tuple[str, dict]]:
    data = DEMO_DATA[family]
    zoo = [f"zoo:{family}/{i}" for i in range(3)]
    learned = dict(classes=preset_classes("all"), data=data, steps=steps)
    return {
        "demo": ("demo", {"recipe": family, "data": data, "steps": steps}),
        "simplex": ("simplex", {"models": zoo, "resolution": 10, "epsilon": 0.05, "max_examples": None,
                                "configs": [AlignConfig(method=m, **learned).to_json()
                                            for m in ("none", "weight", "learned")]}),
        "quick": ("sweep", {"preset": "quick", "family": family, "seeds": [0], "points": 21, "max_examples": None}),
        "align": ("align", {"a": zoo[0], "b": zoo[1], "points": 21, "max_examples": None, "split": "eval",
                            "with_vanilla": True, "config": AlignConfig(method="learned", **learned).to_json()}),
    }


def estimate(task: str, family: str, steps: int, store: RunStore) -> tuple[float, float | None]:
    """(what a page says with no history, what it says from `store`'s history: None without one)."""
    a, b = f"zoo:{family}/0", f"zoo:{family}/1"
    if task == "demo":
        past = durations.demo_estimate(store, family, steps)
        return durations.demo_typical(family, steps)[0], None if past is None else sum(past.values())
    if task == "simplex":
        methods = ("none", "weight", "learned")
        return (durations.simplex_typical(methods, steps, family)[0],
                durations.simplex_estimate(store, a, methods))
    if task == "quick":
        grid = preset_grid("quick", family, seeds=[0])
        default = learned_defaults(DEMO_DATA[family])["steps"]  # the grid's learned cells run the data's default
        return (durations.sweep_typical([c.row.method for c in grid.cells()], family, default)[0],
                durations.took(durations.last_run(store, "sweep", settings={"name": grid.name})))
    return (durations.align_typical("learned", family, steps, with_vanilla=True)[0],
            durations.align_estimate(store, "learned", a, b, steps, with_vanilla=True))


def run(task: str, family: str, steps: int, home: Path) -> float:
    from symalign.jobs.kinds import run_kind

    kind, request = requests(family, steps)[task]
    os.environ["SYMALIGN_HOME"] = str(home)
    began = time.perf_counter()
    run_kind(kind, request, RunStore(home / "runs.sqlite"), Quiet())  # as the worker runs it
    return time.perf_counter() - began


BUSY = """
import torch
torch.set_num_threads(2)
x = torch.randn(1024, 1024)
while True:
    x = torch.tanh(x @ x) / 32
"""


def busy_neighbour():
    """A 2-thread job beside the benchmark (killed when it ends)."""
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", BUSY])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(DEMO_DATA))
    parser.add_argument("--steps", type=int, default=None, help="learned steps (default: the data's, 600 / 300)")
    parser.add_argument("--only", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--beside", action="store_true", help="run beside a 2-thread torch job (a busy machine)")
    args = parser.parse_args()
    rows = []
    probe_home = Path(tempfile.mkdtemp())
    current_load(probe_home)  # the probe's idle reference, taken before any neighbour (a page's: the fastest seen)
    neighbour = busy_neighbour() if args.beside else None
    if neighbour is not None:
        time.sleep(5)  # let it take the cores
    try:
        run_all(args, rows, probe_home)
    finally:
        if neighbour is not None:
            neighbour.kill()
    print(f"\nestimate vs actual, learned steps {args.steps or 'the data default'}, {os.cpu_count()} CPU cores"
          + (", beside a 2-thread job" if args.beside else "") + "\n")
    print("| family | task | history | load factor | estimate (s) | actual (s) | ratio |\n"
          "|---|---|---|---|---|---|---|")
    for family, task, history, factor, said, took in rows:
        ratio = "—" if said is None else f"{said / took:.2f}"
        shown = "none shown" if said is None else f"{said:.0f}"
        print(f"| {family} | {task} | {history} | {factor:.2f} | {shown} | {took:.0f} | {ratio} |")


def run_all(args, rows: list, probe_home: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for family in args.families:
            steps = args.steps or learned_defaults(DEMO_DATA[family])["steps"]
            for task in args.only:  # a data folder per task and pass: no task reuses another's runs
                first, second = Path(folder) / f"{family}-{task}-1", Path(folder) / f"{family}-{task}-2"
                cold, _ = estimate(task, family, steps, RunStore(first / "runs.sqlite"))
                factor = current_load(probe_home).factor  # what a page would scale by now
                took = run(task, family, steps, first)
                rows.append((family, task, "none (typical)", factor, cold * factor, took))
                print(f"{family} {task}: typical {cold:.0f} s × {factor:.2f}, took {took:.0f} s", flush=True)
                _, warm = estimate(task, family, steps, RunStore(first / "runs.sqlite"))
                factor = current_load(probe_home).factor
                again = run(task, family, steps, second)
                rows.append((family, task, "last time here", factor, None if warm is None else warm * factor, again))
                print(f"{family} {task}: from history {warm if warm is None else round(warm)} s × {factor:.2f}, "
                      f"took {again:.0f} s", flush=True)


if __name__ == "__main__":
    main()
