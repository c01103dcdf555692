"""The app's view of background jobs: a live table with cancel buttons, and a panel that follows
one job until it ends. Both redraw themselves (`st.fragment(run_every=…)`) without rerunning the
page, and read only the queue in the run database, so leaving the page loses nothing."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from symalign.jobs.queue import FINAL, RESUME_WINDOW, Job, JobQueue, ensure_worker, worker_alive
from symalign.ui.widgets import scroll_into_view, timing

REFRESH_SECONDS = 1.0


def job_queue() -> JobQueue:
    return JobQueue()


def submit_job(kind: str, request: dict, label: str = "") -> str:
    """Queue a job for this session (checked against the access policy: a guest's models, data,
    training and number of active jobs) and make sure a worker will take it."""
    from symalign.ui.session import access, check_request, session_id

    check_request(kind, request)
    queue = job_queue()
    access().check_queue(queue.active(session_id()))
    job_id = queue.submit(kind, request, label, owner=session_id())
    ensure_worker(queue)
    st.session_state["scroll-to-job"] = job_id  # its panel is brought into view where it is drawn
    return job_id


def submit_or_join(kind: str, request: dict, label: str = "") -> str:
    """The id of a job doing exactly this request: one already queued or running (a second click,
    another tab, another visitor) is joined rather than repeated; else a new one is submitted."""
    running = job_queue().find(kind, request)
    return running.id if running is not None else submit_job(kind, request, label)


def resume_job(kinds: tuple[str, ...], on_done_key: str) -> None:
    """On a page opened anew (a reload, a closed tab reopened, another tab of this browser), pick up this
    visitor's newest job of `kinds`: one still under way is followed again; else one that finished in the
    last RESUME_WINDOW seconds shows its result (issue #56: a reopened Align tab came back blank)."""
    from symalign.ui.session import session_id

    if f"{on_done_key}-job" in st.session_state or on_done_key in st.session_state:
        return
    queue, me = job_queue(), session_id()
    found = [job for job in (queue.find(kind, owner=me) for kind in kinds) if job is not None]
    if found:
        st.session_state[f"{on_done_key}-job"] = max(found, key=lambda job: job.created).id
        return
    since = time.time() - RESUME_WINDOW
    done = [job for job in (queue.find(kind, since=since, states=("done",), owner=me) for kind in kinds)
            if job is not None and job.runs]
    if done:
        st.session_state[on_done_key] = max(done, key=lambda job: job.created).runs


def _age(job: Job) -> str:
    end = job.finished or time.time()
    start = job.started or job.created
    return f"{end - start:.0f} s"


def jobs_frame(jobs: list[Job]) -> pd.DataFrame:
    # short columns first, long text last: at 1280 px the progress stays in view whatever a title's length
    return pd.DataFrame([{"job": j.id, "state": j.state, "progress": j.fraction, "time": _age(j), "runs": len(j.runs),
                          "what": j.title, "phase": j.phase, "error": j.error or ""} for j in jobs])


@st.fragment(run_every=REFRESH_SECONDS)
def jobs_board() -> None:
    queue = job_queue()
    jobs = queue.list(limit=50)
    if not jobs:
        st.info("No jobs yet: runs started on Align, Simplex, Merge, Models and Ablations are jobs by default (their "
                "*run in the background* box), and so is the guided demo.")
        return
    alive = worker_alive(queue)
    st.caption(f"Worker: {'running' if alive else 'idle (one starts when a job is queued)'} · "
               f"refreshes every {REFRESH_SECONDS:.0f} s")
    st.dataframe(jobs_frame(jobs), hide_index=True, width="stretch", key="jobs-table",
                 column_config={"progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0)})
    active = [j for j in jobs if j.state not in FINAL]
    from symalign.ui.session import access, session_id

    policy, me = access(), session_id()
    for job in active:
        left, right = st.columns([4, 1])
        left.progress(job.fraction, text=f"{job.title}: {job.state} · {job.phase or 'waiting'} {job.done}/{job.total}")
        if not policy.may_change(job.owner, me):
            right.caption("another visitor's")
            continue
        if right.button("Cancel", key=f"cancel-{job.id}", disabled=bool(job.cancel)):
            queue.cancel(job.id)  # the worker stops at the job's next progress report
            right.caption("cancelling…")


def job_timing(job) -> str:
    """" · 40 s in all · this part 12 s, about 30 s left": the job's elapsed time and its current part's,
    with the time left at that part's own rate (the estimator of the in-page bars, symalign.ui.widgets.timing)."""
    if job.started is None:
        return ""
    now = time.time()
    text = f" · {now - job.started:.0f} s in all"
    if job.phase_started is not None:
        text += f" · this part {timing(now - job.phase_started, job.done, job.total)}"
    return text


def waiting_for(job: Job) -> str:
    """What a queued job waits for (issue #70: 20-30 s of "waiting 0/0" said nothing): the jobs ahead of it
    in the one worker's queue, else the worker process starting (it imports torch and loads the models)."""
    queue = job_queue()
    ahead = [j for j in queue.list(limit=200) if j.state in ("queued", "running") and j.created < job.created]
    running = [j for j in ahead if j.state == "running"]
    if running:
        return (f"waiting behind {running[0].title} ({running[0].phase or 'starting'} {running[0].done}/"
                f"{running[0].total})" + (f" and {len(ahead) - 1} more queued" if len(ahead) > 1 else ""))
    if ahead:
        return f"waiting behind {len(ahead)} queued job{'s' * (len(ahead) > 1)}"
    waited = time.time() - job.created
    return (f"waiting {waited:.0f} s for the worker process to start (it imports torch and loads the models: "
            "10-30 s on a busy machine)" if not worker_alive(queue) else
            f"waiting {waited:.0f} s for the worker to pick it up")


def follow_job(job_id: str, on_done_key: str, cancel: bool = False) -> None:
    """A live panel for one job; when it is done its run ids go to session_state[on_done_key]. `cancel`: a
    Cancel button beside the bar (for the visitor who may cancel it). A job this page just submitted is
    scrolled into view, with the result that replaces it."""
    if st.session_state.get("scroll-to-job") == job_id:
        st.session_state.pop("scroll-to-job")
        scroll_into_view(f"job-{job_id}")

    @st.fragment(run_every=REFRESH_SECONDS)
    def panel() -> None:
        job = job_queue().get(job_id)
        if job.state == "done":
            st.session_state[on_done_key] = job.runs
            st.session_state.pop(f"{on_done_key}-job", None)
            st.rerun()
        if job.state in FINAL:
            st.session_state.pop(f"{on_done_key}-job", None)
            st.error(f"Job {job.id} {job.state}" + (f": {job.error}" if job.error else "."))
            return
        if job.state == "queued":
            ensure_worker(job_queue())  # a worker that left as the job came: another takes it
            st.progress(0.0, text=f"job {job.id}: queued · {waiting_for(job)} (you can leave this page; see Jobs)")
        else:
            st.progress(job.fraction, text=f"job {job.id}: {job.state} · {job.phase or 'starting'} {job.done}/"
                                           f"{job.total}{job_timing(job)} (you can leave this page; see Jobs)")
        if cancel:
            from symalign.ui.session import access, session_id

            if access().may_change(job.owner, session_id()) and st.button(
                    "Cancel", key=f"follow-cancel-{job.id}", disabled=bool(job.cancel)):
                job_queue().cancel(job.id)  # the worker stops at the job's next progress report
                st.caption("cancelling…")

    panel()
