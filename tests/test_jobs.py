"""Background jobs (issue #13): work runs in a worker process, the run history is the source of
truth, cancelling stops a running job within seconds, a killed worker leaves the database sound
and its job marked, queued jobs survive a restart, and concurrent jobs do not mix their results."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from job_support import wait_for_job

from symalign.errors import SymalignError
from symalign.jobs.queue import WORKER_DIED, JobQueue, ensure_worker, resume_jobs, worker_alive, worker_pidfile
from symalign.jobs.worker import JobProgress
from symalign.runs.database import pid_alive
from symalign.runs.store import RunStore
from symalign.workflows.execute import barrier_run

pytestmark = pytest.mark.slow  # minutes of learned matching or a real browser: `-m 'not slow'` skips

BARRIER = {"data": "digits", "points": 5, "max_examples": 64}
LONG_LEARNED = {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", "points": 5, "max_examples": 64,
                "config": {"method": "learned", "classes": {"qk": "orthogonal", "vo": "orthogonal",
                                                           "residual": "orthogonal"},
                           "data": "digits", "steps": 100_000, "patience": 100_000}}


@pytest.fixture()
def queue(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path))
    q = JobQueue(tmp_path / "runs.sqlite")
    yield q
    for job in q.list(state="running"):  # never leave a worker behind
        if job.pid:
            try:
                os.kill(job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_running(queue: JobQueue, job_id: str, timeout: float = 180.0):
    """Until the job reports progress inside the learned optimisation."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = queue.get(job_id)
        if job.state == "running" and job.phase == "align" and job.done > 0:
            return job
        assert job.state in ("queued", "running"), (job.state, job.error)
        time.sleep(0.2)
    raise AssertionError("the job never started learning")


def test_a_job_runs_in_a_worker_process_and_records_its_runs(queue):
    job_id = queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", **BARRIER})
    assert queue.get(job_id).state == "queued"
    assert ensure_worker(queue, idle_exit=5)
    job = wait_for_job(queue, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    assert job.pid != os.getpid() and job.done == job.total > 0
    (run,) = [RunStore(queue.path).get(r) for r in job.runs]
    assert run.state == "done" and run.source == "app"
    _, curve = barrier_run("zoo:vit-digits/0", "zoo:vit-digits/1", **BARRIER)
    assert run.metrics["barrier"] == pytest.approx(curve.barrier, abs=1e-6)


def test_cancelling_a_running_job_stops_it_within_seconds(queue):
    job_id = queue.submit("align", LONG_LEARNED)
    ensure_worker(queue, idle_exit=5)
    wait_running(queue, job_id)
    asked = time.monotonic()
    queue.cancel(job_id)
    job = wait_for_job(queue, job_id, ("cancelled", "failed", "done"), timeout=30)
    assert job.state == "cancelled" and time.monotonic() - asked < 10
    (run,) = [RunStore(queue.path).get(r) for r in job.runs]
    assert run.state == "failed"  # the run it had started is closed, not left running


def test_a_queued_job_can_be_cancelled_before_it_starts(queue):
    job_id = queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", **BARRIER})
    queue.cancel(job_id)
    assert queue.get(job_id).state == "cancelled" and queue.claim(12345) is None


def test_a_killed_worker_leaves_the_database_sound_and_the_job_marked(queue):
    store = RunStore(queue.path)
    earlier, _ = barrier_run("zoo:vit-digits/0", "zoo:vit-digits/2", store=store, **BARRIER)
    before = store.get(earlier)
    job_id = queue.submit("align", LONG_LEARNED)
    ensure_worker(queue, idle_exit=5)
    job = wait_running(queue, job_id)
    os.kill(job.pid, signal.SIGKILL)
    job = wait_for_job(queue, job_id, ("failed",), timeout=30)
    assert job.error == WORKER_DIED
    assert store.check() == "ok"
    assert store.get(earlier).metrics == before.metrics and store.get(earlier).state == "done"
    learned = [r for r in store.list(kind="align")]
    assert len(learned) == 1 and learned[0].state == "interrupted"


def test_a_queued_job_survives_a_restart(queue):
    job_id = queue.submit("barrier", {"a": "zoo:vit-digits/1", "b": "zoo:vit-digits/2", **BARRIER}, label="later")
    restarted = JobQueue(queue.path)  # a new app process reads the same file
    assert [j.id for j in restarted.list(state="queued")] == [job_id]
    assert resume_jobs(restarted)
    assert wait_for_job(restarted, job_id, ("done", "failed")).state == "done"
    assert not resume_jobs(restarted)  # nothing queued: no worker started


def test_two_concurrent_workers_keep_their_jobs_apart(queue):
    pairs = [("zoo:vit-digits/0", "zoo:vit-digits/1"), ("zoo:vit-digits/0", "zoo:vit-digits/2")]
    ids = [queue.submit("barrier", {"a": a, "b": b, **BARRIER}) for a, b in pairs]
    env = dict(os.environ, SYMALIGN_HOME=str(queue.path.parent))
    workers = [subprocess.Popen([sys.executable, "-m", "symalign.jobs.worker", "--idle-exit", "3"], env=env)
               for _ in range(2)]
    try:
        jobs = [wait_for_job(queue, i, ("done", "failed")) for i in ids]
    finally:
        for w in workers:
            w.wait(timeout=120)
    store = RunStore(queue.path)
    for (a, b), job in zip(pairs, jobs):
        assert job.state == "done", job.error
        (run,) = [store.get(r) for r in job.runs]
        assert (run.model_a, run.model_b) == (a, b)
        assert run.metrics["barrier"] == pytest.approx(barrier_run(a, b, **BARRIER)[1].barrier, abs=1e-6)


def test_progress_reports_and_raises_once_cancel_is_asked(queue):
    from symalign.jobs.queue import JobCancelled

    job_id = queue.submit("barrier", {"a": "x", "b": "y"})
    progress = JobProgress(queue, job_id, interval=0.0)
    progress("align", 3, 10)
    job = queue.get(job_id)
    assert (job.phase, job.done, job.total) == ("align", 3, 10)
    began = job.phase_started
    time.sleep(0.05)
    progress("align", 5, 10)
    assert queue.get(job_id).phase_started == began  # the same part: its clock runs on
    progress("align", 6, 10, "weight (all)")
    progress("align", 7, 10, "learned (all)")  # the note changes (a paper table's next row), the phase does not
    assert queue.get(job_id).phase == "align · learned (all)"
    assert queue.get(job_id).phase_started == began  # one clock over the whole phase (issue #109)
    progress("barrier", 1, 21)
    assert queue.get(job_id).phase_started > began  # a new part: its own clock (its time left at its own rate)
    began = queue.get(job_id).phase_started
    time.sleep(0.05)
    progress("b%", 1, 21)  # a phase whose name a LIKE pattern would read as a wildcard
    assert queue.get(job_id).phase_started > began
    from symalign.ui.jobs import job_timing

    running = queue.get(job_id)
    running.started, running.phase_started, running.done, running.total = time.time() - 40, time.time() - 10, 5, 20
    text = job_timing(running)
    assert "40 s in all" in text and "this part 10 s, about 30 s left" in text  # 10 s for 5 of 20: 30 s to go
    queue.cancel(job_id)
    with pytest.raises(JobCancelled):
        progress("align", 4, 10)


def test_a_failing_job_says_why_in_one_line(queue):
    job_id = queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:gpt-shakespeare/0", **BARRIER})
    ensure_worker(queue, idle_exit=3)
    job = wait_for_job(queue, job_id, ("done", "failed"))
    assert job.state == "failed" and "\n" not in job.error and job.error


def test_unknown_job_kinds_are_refused(queue):
    with pytest.raises(SymalignError, match="unknown job kind"):
        queue.submit("train-the-world", {})


def test_a_simplex_job_computes_each_method_as_the_foreground_does(queue):
    from symalign.match.config import CLASS_PRESETS, AlignConfig
    from symalign.workflows.many import simplex_run

    models = [f"zoo:vit-digits/{i}" for i in range(3)]
    configs = [AlignConfig(method=m, classes=CLASS_PRESETS["all"], data="digits") for m in ("none", "weight")]
    request = {"models": models, "configs": [c.to_json() for c in configs], "resolution": 2, "max_examples": 48}
    job_id = queue.submit("simplex", request)
    ensure_worker(queue, idle_exit=5)
    job = wait_for_job(queue, job_id)
    assert job.state == "done", job.error
    runs = [RunStore(queue.path).get(r) for r in job.runs]
    assert [r.method for r in runs] == ["none", "weight"] and all(r.state == "done" for r in runs)
    for run, config in zip(runs, configs):
        _, surface = simplex_run(models, config, resolution=2, max_examples=48, store=RunStore(queue.path))
        assert run.metrics["max_barrier"] == pytest.approx(surface.max_barrier, abs=1e-6)
    assert runs[0].metrics["max_barrier"] != pytest.approx(runs[1].metrics["max_barrier"], abs=1e-3)


def test_a_training_job_writes_the_model_and_a_cancelled_one_leaves_nothing(queue, tmp_path):
    from symalign.models import load_model

    done_out, cancelled_out = tmp_path / "models" / "short", tmp_path / "models" / "long"
    short = queue.submit("train", {"recipe": "vit-digits", "seed": 4, "steps": 3, "out": str(done_out)})
    long = queue.submit("train", {"recipe": "vit-digits", "seed": 4, "steps": 100_000, "out": str(cancelled_out)})
    ensure_worker(queue, idle_exit=5)
    assert wait_for_job(queue, short).state == "done"
    assert load_model(done_out).family.name == "vit" and (done_out / "training.json").is_file()
    deadline = time.monotonic() + 120
    while queue.get(long).done == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert queue.get(long).phase == "train" and cancelled_out.is_dir()
    queue.cancel(long)
    assert wait_for_job(queue, long, timeout=30).state == "cancelled"
    assert not cancelled_out.exists()  # no half-trained model left for the Models page to list


def test_a_merge_job_records_the_merge_the_foreground_computes(queue):
    from symalign.merge import merge_models
    from symalign.models import load_model

    request = {"models": ["zoo:vit-digits/0", "zoo:vit-digits/1"], "align": "weight", "how": "average",
               "data": "digits", "max_examples": 128}
    job_id = queue.submit("merge", request)
    ensure_worker(queue, idle_exit=5)
    job = wait_for_job(queue, job_id)
    assert job.state == "done", job.error
    (run,) = [RunStore(queue.path).get(r) for r in job.runs]
    here = merge_models([load_model(m) for m in request["models"]], "weight", "average", "digits", max_examples=128)
    assert run.kind == "merge" and run.metrics["merged"]["loss"] == pytest.approx(here.report["merged"]["loss"],
                                                                                  abs=1e-6)


class _CutOff(Exception):
    pass


def test_a_demo_cut_off_after_its_first_part_finishes_it_without_recomputing(queue):
    """Issue #43: a closed tab stopped the demo, and asking again recomputed its finished parts (the
    history then held "no alignment" twice). Each part is now answered on its own."""
    from symalign.demo import seeds_demo

    store = RunStore(queue.path)
    landed = []

    def cut_after_first(run_id):
        landed.append(run_id)
        raise _CutOff()

    with pytest.raises(_CutOff):
        seeds_demo("zoo:vit-digits/0", "zoo:vit-digits/1", "digits", store, learned_steps=5, max_examples=64,
                   reuse=True, on_run=cut_after_first)
    ids = seeds_demo("zoo:vit-digits/0", "zoo:vit-digits/1", "digits", store, learned_steps=5, max_examples=64,
                     reuse=True)
    assert ids[0] == landed[0] and len(set(ids)) == 3
    assert sorted(r.id for r in store.list(state="done")) == sorted(ids)  # each part once in the history
    more = seeds_demo("zoo:vit-digits/0", "zoo:vit-digits/1", "digits", store, learned_steps=6, max_examples=64,
                      reuse=True)  # other learned steps: only the learned part depends on them
    assert more[:2] == ids[:2] and more[2] not in ids
    assert len(store.list(state="done")) == 4
    store.delete(more[2])
    # the estimate Home gives before the next demo and counts down from: what each part took here
    from symalign.runs.durations import DEMO_PARTS, demo_estimate

    took = {store.get(i).label: store.get(i).finished - store.get(i).created for i in ids}
    estimate = demo_estimate(store, "vit-digits", 10)
    assert list(estimate) == list(DEMO_PARTS)
    assert took["demo: no alignment"] > 0
    assert estimate["demo: no alignment"] == pytest.approx(took["demo: no alignment"])
    assert estimate["demo: learned matching"] == pytest.approx(2 * took["demo: learned matching"])  # 10 vs 5 steps
    assert demo_estimate(store, "gpt-shakespeare", 10) is None  # never run here: no number is made up
    # the other pages' estimates (Spectra's learned run, Ablations' grid, Simplex) come from the same history
    from symalign.runs.durations import align_estimate, estimate_text, last_run, simplex_estimate

    pair = ("zoo:vit-digits/0", "zoo:vit-digits/1")
    assert align_estimate(store, "learned", *pair, 10) == pytest.approx(2 * took["demo: learned matching"])
    assert last_run(store, "barrier", model_a=pair[0], model_b=pair[1]).id == ids[0]  # the demo's vanilla part
    assert last_run(store, "align", method="weight", model_a=pair[0], model_b=pair[1]).id == ids[1]
    assert last_run(store, "align", method="weight", model_a=pair[1]) is None  # not that pair's order
    assert simplex_estimate(store, pair[0], ("none",)) is None
    assert estimate_text(None, "about 40 s") == "typically about 40 s on 2 CPU cores; not yet run here"
    assert estimate_text(took["demo: no alignment"], "x").endswith(" s here last time")


def test_a_demo_job_lists_each_run_as_it_lands_and_an_identical_request_finds_it(queue):
    request = {"recipe": "vit-digits", "data": "digits", "steps": 5}
    job_id = queue.submit("demo", request, owner="browser-1")
    assert queue.find("demo", request).id == job_id  # a second click joins it instead of queueing another
    assert queue.find("demo", {**request, "steps": 6}) is None
    seen = []
    ensure_worker(queue, idle_exit=5)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        job = queue.get(job_id)
        seen.append(len(job.runs))
        if job.state in ("done", "failed"):
            break
        time.sleep(0.1)
    assert job.state == "done", job.error
    assert len(job.runs) == 3 and any(0 < n < 3 for n in seen)  # runs appeared before the job ended
    assert queue.find("demo") is None and queue.find("demo", states=("done",)).id == job_id
    labels = [RunStore(queue.path).get(r).label for r in job.runs]
    assert labels == ["demo: no alignment", "demo: weight matching", "demo: learned matching"]


def test_a_long_job_that_finished_recently_is_found_as_recent_and_only_by_its_owner(queue):
    """Issue #56: a closed tab reopened after its job ended shows the result. A job counts as recent by
    when it finished, not when it was queued (a 7-minute demo would otherwise fall out of the window)."""
    job_id = queue.submit("align", {"a": "x", "b": "y"}, owner="browser-1")
    created = queue.get(job_id).created
    assert queue.claim(os.getpid()).id == job_id
    queue.add_run(job_id, "run-1")
    time.sleep(0.05)
    queue.end(job_id, "done")
    after_queued = created + 0.01  # a window that opened after the job was queued, before it finished
    assert queue.find("align", since=after_queued, states=("done",), owner="browser-1").runs == ["run-1"]
    assert queue.find("align", since=after_queued, states=("done",), owner="browser-2") is None
    assert queue.find("align", since=time.time() + 1, states=("done",)) is None


def test_a_job_queued_while_the_worker_leaves_is_run_not_stranded(queue, monkeypatch):
    """The race a fresh-clone CI hit twice: a worker past its idle time had checked the queue, found it
    empty and was on its way out when a job came; the submitter saw its pid alive and started none, and
    the job stayed queued. Leaving now gives up the pidfile first and looks once more."""
    from symalign.jobs import worker
    from symalign.jobs.queue import worker_alive, worker_pidfile

    worker_pidfile(queue.path).write_text(str(os.getpid()))  # this process is the worker
    claim, ran = queue.claim, []

    def claim_then_a_job_arrives(pid):
        job = claim(pid)
        if not ran and not getattr(claim_then_a_job_arrives, "submitted", False):
            claim_then_a_job_arrives.submitted = True  # the empty check, then a visitor's job
            queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", **BARRIER})
            assert not ensure_worker(queue)  # the submitter trusts the worker it sees alive
        return job

    monkeypatch.setattr(queue, "claim", claim_then_a_job_arrives)
    monkeypatch.setattr(worker, "run_job", lambda q, job: ran.append(job.id) or q.end(job.id, "done"))
    assert worker.serve(queue, idle_exit=0.0, poll=0.01) == 1  # the old loop returned 0 here
    assert len(ran) == 1 and queue.pending() == 0
    assert not worker_alive(queue)  # and having left, it no longer claims to be there


def test_a_queued_job_says_what_it_waits_for(tmp_path, monkeypatch):
    """Issue #70: each job opened with 20-30 s of "waiting 0/0". A queued job names the job running ahead of
    it (and how many more), or says that the worker process is starting."""
    import os
    import time

    from symalign.ui import jobs as ui_jobs

    queue = JobQueue(tmp_path / "runs.sqlite")
    monkeypatch.setattr(ui_jobs, "job_queue", lambda: queue)
    first = queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1"}, label="the first")
    time.sleep(0.01)
    second = queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/2"}, label="the second")
    assert "worker process to start" in ui_jobs.waiting_for(queue.get(first))  # nothing ahead, no worker
    assert ui_jobs.waiting_for(queue.get(second)) == "waiting behind 1 queued job"
    queue.claim(os.getpid())  # the first starts running
    assert ui_jobs.waiting_for(queue.get(second)).startswith("waiting behind the first (")


def test_submitters_at_once_start_one_worker(queue):
    """Six guests' clicks at once (issue #70's seminar) each asked for a worker: without a lock around looking
    and starting, each saw none and three workers started, each importing torch on the shared cores."""
    import threading

    gate, started = threading.Barrier(8), []

    def submitter() -> None:
        gate.wait()
        started.append(ensure_worker(queue, idle_exit=2))

    threads = [threading.Thread(target=submitter) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(started) == [False] * 7 + [True]
    assert worker_alive(queue)
    pid = int(worker_pidfile(queue.path).read_text())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and pid_alive(pid):  # it leaves by itself, having had no work
        time.sleep(0.2)
    assert not pid_alive(pid)
