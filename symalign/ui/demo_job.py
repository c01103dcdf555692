"""Home's guided demo as a background job the page follows (issue #43: a closed or reloaded tab
marked the demo "interrupted", and running it again recomputed its finished parts).

The job (symalign.jobs.kinds.demo_job) runs in the worker process, so it does not depend on the
browser's connection; the page draws its progress and each run as it lands, and a page opened
later picks the job up again. Reads only the job queue: nothing heavy loads on Home's first paint."""

from __future__ import annotations

import time

import streamlit as st

from symalign.jobs.queue import FINAL, RESUME_WINDOW, JobQueue

REFRESH_SECONDS = 1.0
PARTS = ("no alignment", "weight matching", "learned matching")


def demo_to_resume() -> str | None:
    """A demo job to show on a page that has none: any demo still under way (the demo is the same seeded
    computation for every visitor, so its progress is no one's secret), else one this browser started
    that finished in the last ten minutes."""
    from symalign.ui.session import session_id

    queue = JobQueue()
    job = queue.find("demo")
    if job is None:
        job = queue.find("demo", since=time.time() - RESUME_WINDOW, states=("done",), owner=session_id())
    return job.id if job is not None else None


def _landed(runs: list[str]) -> None:
    from symalign.ui.state import run_store

    store = run_store()
    for col, run_id in zip(st.columns(len(PARTS)), runs):
        run = store.get(run_id)
        col.metric(f"{run.label.removeprefix('demo: ')} · barrier", f"{run.metrics['barrier']:.3f}")


def follow_demo(job_id: str) -> None:
    """A live panel for the demo job: part k of 3, its phase, elapsed time and time left, and each
    finished part's barrier. When the job ends its runs go to session_state["demo-runs"]."""
    from symalign.runs.durations import demo_estimate
    from symalign.runs.store import RunStore
    from symalign.ui.widgets import timing

    first = JobQueue().get(job_id)
    estimate = demo_estimate(RunStore(), first.request["recipe"], int(first.request.get("steps") or 0))

    @st.fragment(run_every=REFRESH_SECONDS)
    def panel() -> None:
        job = JobQueue().get(job_id)
        if job.state == "done":
            st.session_state["demo-runs"] = job.runs
            st.session_state["demo-recipe-done"] = job.request["recipe"]
            st.session_state.pop("demo-job", None)
            st.rerun()
        if job.state in FINAL:
            st.session_state.pop("demo-job", None)
            st.error(f"The demo {job.state}" + (f": {job.error}" if job.error else "."))
            return
        st.markdown(f"**2 · two real seeds ({job.request['recipe']}): part {min(len(job.runs) + 1, 3)} of 3, "
                    f"{PARTS[min(len(job.runs), 2)]}** — it goes on if you close or reload this tab")
        phase = job.phase or "waiting for the worker to start"
        part = PARTS[min(len(job.runs), 2)]
        clock = st.session_state.setdefault(f"demo-clock-{job_id}", {})
        began = clock.setdefault(part, time.time())  # each part's clock starts when this page first sees it
        elapsed = time.time() - began
        text = f"{phase}: {job.done}/{job.total} · {timing(elapsed, job.done, job.total)}"
        if "left" not in text and estimate and f"demo: {part}" in estimate:  # before its own rate: last time's
            text += f", about {max(0.0, estimate[f'demo: {part}'] - elapsed):.0f} s left (as last time)"
        st.progress(job.fraction, text=text if job.total else phase)
        if job.runs:
            _landed(job.runs)

    panel()
