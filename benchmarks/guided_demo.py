"""The numbers the Home page's guided demo shows, through the demo's own code (symalign.demo).

    python -m benchmarks.guided_demo [--recipe vit-digits] [--threads 2] [--beside] [--job]

`--beside`: the same, while another process runs a learned alignment of the gpt-shakespeare pair
(as on a laptop that is also doing something else; issue #43's "within 120 s beside one other
alignment"). The issue's goals: ≤ 60 s alone, ≤ 120 s beside. `--job`: part 2 as the app now runs
it, a background job in a fresh worker process (so it survives a closed tab), its start included.

Part 1 plants a random symmetry in seed 0 and undoes it with weight matching; part 2 aligns
seeds 0 and 1 with no alignment, weight matching and learned matching (all classes, the same
settings as the README's `symalign align ... --method learned --classes all` command)."""

from __future__ import annotations

import argparse
import time

import torch

from symalign.data import load_data
from symalign.demo import planted_demo, seeds_demo
from symalign.models import load_model
from symalign.runs import RunStore
from symalign.train.recipes import DEMO_DATA


def demo_job(store: RunStore, recipe: str, spec: str) -> list[str]:
    """Part 2 as Home runs it (symalign.jobs.kinds.demo_job in a fresh worker process)."""
    import os

    from symalign.data import learned_defaults
    from symalign.jobs.queue import FINAL, JobQueue, ensure_worker

    os.environ["SYMALIGN_HOME"] = str(store.path.parent)
    queue = JobQueue(store.path)
    job_id = queue.submit("demo", {"recipe": recipe, "data": spec, "steps": learned_defaults(spec)["steps"]})
    ensure_worker(queue, idle_exit=5)
    while (job := queue.get(job_id)).state not in FINAL:
        time.sleep(0.2)
    if job.state != "done":
        raise SystemExit(f"the demo job {job.state}: {job.error}")
    return job.runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipe", default="vit-digits", choices=list(DEMO_DATA))
    parser.add_argument("--threads", type=int, default=0, help="0 (default): as the app picks them, "
                        "symalign.device.threads_for_load (the cores minus the load average)")
    parser.add_argument("--beside", action="store_true", help="run beside another alignment process")
    parser.add_argument("--job", action="store_true", help="part 2 as the app runs it: a background job in the "
                        "worker process (its start and imports included)")
    args = parser.parse_args()
    other = None
    if args.beside:
        import subprocess
        import sys
        import tempfile

        other = subprocess.Popen([sys.executable, "-m", "symalign.cli", "align", "zoo:gpt-shakespeare/0",
                                  "zoo:gpt-shakespeare/1", "--method", "learned", "--classes", "all", "--data",
                                  "shakespeare", "--no-record", "--out", tempfile.mkdtemp()],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(20)  # past its imports, and long enough for the load average to show it
    from symalign.device import threads_for_load

    threads = args.threads or threads_for_load()  # as the app's heavy work picks them (ui.session.heavy_work)
    torch.set_num_threads(threads)
    spec = DEMO_DATA[args.recipe]
    data = load_data(spec)
    a, b = load_model(f"zoo:{args.recipe}/0"), load_model(f"zoo:{args.recipe}/1")
    start = time.perf_counter()
    planted = planted_demo(a, data)
    print(f"threads: {threads}; {args.recipe}")
    print(f"1 · planted: max |Δlogit| {planted.function_gap:.1e}, weights moved {100 * planted.weight_change:.0f}%, "
          f"vanilla barrier {planted.vanilla['barrier']:.3f}, after weight matching {planted.aligned['barrier']:.1e} "
          f"({planted.align_seconds:.1f} s)")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(f"{tmp}/runs.sqlite")
        ids = demo_job(store, args.recipe, spec) if args.job else seeds_demo(a, b, spec, store, data_source=data)
        runs = [store.get(i) for i in ids]
        print("2 · seeds 0 and 1: " + ", ".join(f"{r.label.removeprefix('demo: ')} {r.metrics['barrier']:.3f}"
                                                  for r in runs))
    beside = "" if other is None else f" beside another alignment (still running: {other.poll() is None})"
    print(f"total {time.perf_counter() - start:.0f} s{beside}")
    if other is not None:
        other.kill()


if __name__ == "__main__":
    main()
