"""The visitor's session in the app: who they are (a session id that owns their runs, jobs and
uploads), what the access policy lets them do (symalign.ui.access), the passphrase gate of a
shared app, and one slot for heavy work at a time.

Why a slot: Streamlit serves every browser from threads of one process, and each computation
already uses every core (torch's threads); two at once only make both slower, twenty at once
make everyone wait for all of them. Identical requests do not even get that far: they are
answered once (symalign.runs.reuse)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from symalign.ui.access import Access, new_session_id
from symalign.workspace import available_models, home

SESSION_KEY = "symalign-session"
AUTH_KEY = "symalign-authenticated"
XSRF_COOKIE = "_streamlit_xsrf"


def access() -> Access:
    return Access.from_environment()


def xsrf_token(cookie: str) -> str:
    """The token inside tornado's XSRF cookie. A version-2 cookie ("2|mask|masked token|time") is
    written with a fresh random 4-byte mask each time the server sends it, so its raw value changes
    on every page load while the token it carries stays (issue #56: hashing the raw value gave each
    reload a new owner, and a reloaded page never found its own job)."""
    parts = cookie.strip("\"'").split("|")
    if len(parts) == 4 and parts[0] == "2":
        try:
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        except ValueError:
            return cookie
        if len(mask) == 4:
            return bytes(b ^ mask[i % 4] for i, b in enumerate(masked)).hex()
    return cookie


def browser_id() -> str | None:
    """An id of this browser (not of its connection): a hash of the token in Streamlit's XSRF cookie,
    which the server sets once and the browser sends with every page load, so a reload or a new tab
    is the same visitor. None where there is no cookie (XSRF protection off, a test harness)."""
    import hashlib

    try:
        cookie = st.context.cookies.get(XSRF_COOKIE)
    except Exception:  # no browser behind this script run (bare mode, AppTest)
        return None
    return hashlib.sha256(f"symalign:{xsrf_token(cookie)}".encode()).hexdigest()[:32] if cookie else None


def session_id() -> str:
    """This visitor's id, the owner of what they start: the browser's (a reload or another tab keeps
    it: issue #43), else a new one per connection."""
    if SESSION_KEY not in st.session_state:
        st.session_state[SESSION_KEY] = browser_id() or new_session_id()
    return st.session_state[SESSION_KEY]


def uploads_root() -> Path:
    """Guests' uploads, one folder per session: listed only to the session that uploaded them."""
    path = home() / "guest_uploads"
    path.mkdir(exist_ok=True)
    return path


def own_uploads_dir() -> Path:
    return uploads_root() / session_id()


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def own_models() -> list[tuple[str, str]]:
    """(label, reference) of the models this session uploaded as a guest."""
    folder = own_uploads_dir()
    if not folder.is_dir():
        return []
    return [(f"your upload: {d.name}", str(d)) for d in sorted(folder.iterdir()) if (d / "config.json").is_file()]


def offered_models() -> list[tuple[str, str]]:
    """(label, reference) of every model this visitor may pick: the host's list, then their uploads."""
    return [(e.label, e.ref) for e in available_models()] + own_models()


def check_model(ref: str) -> None:
    policy = access()
    if policy.guest:
        policy.check_model(ref, {r for _, r in offered_models()})


def unlocked() -> bool:
    """Whether the visitor may see the app: no passphrase is set, or they gave it this session."""
    return not access().password_sha256 or bool(st.session_state.get(AUTH_KEY))


def passphrase_page() -> None:
    """The only page of a shared app with a passphrase until the visitor gives it."""
    st.title("symalign")
    st.markdown("This app is shared with a passphrase. Ask the host for it.")
    with st.form("passphrase"):
        attempt = st.text_input("passphrase", type="password", key="passphrase-input")
        if st.form_submit_button("Enter"):
            if access().password_ok(attempt):
                st.session_state[AUTH_KEY] = True
                st.rerun()
            st.error("That is not the passphrase.")


_SLOTS = threading.BoundedSemaphore(max(1, int(os.environ.get("SYMALIGN_APP_SLOTS", "1"))))


@contextmanager
def heavy_slot(on_wait=None) -> Iterator[None]:
    """Hold one of the app's slots for heavy work (no Streamlit here, so a worker thread may use it):
    `on_wait()` is called once if another computation holds the slot first."""
    from symalign.device import polite_threads

    if not _SLOTS.acquire(blocking=False):
        if on_wait is not None:
            on_wait()
        _SLOTS.acquire()
    try:
        with polite_threads():  # a laptop busy with something else: fewer threads, not a thread fight
            yield
    finally:
        _SLOTS.release()


@contextmanager
def heavy_work(what: str = "this computation") -> Iterator[None]:
    """Run heavy work in one of the app's slots (SYMALIGN_APP_SLOTS, default 1), saying so while
    another session's work holds it."""
    notes = []
    with heavy_slot(lambda: notes.append(
            st.info(f"Waiting for the computation of another visitor to finish before {what} starts…"))):
        for note in notes:
            note.empty()
        yield


# Where a job's request names models and data (symalign.jobs.kinds): what a guest's request is checked on.
REQUEST_MODELS = ("a", "b", "a_ft", "base", "models")
REQUEST_DATA = ("data", "data_task", "data_base")


def check_request(kind: str, request: dict) -> None:
    """Refuse a guest's job that names a model or data the policy does not offer them, or trains
    without the host's leave: a job runs in another process, so it is checked before it is queued."""
    policy = access()
    if not policy.guest:
        return
    if kind == "train":
        policy.check_training()
    for key in REQUEST_MODELS:
        value = request.get(key)
        for ref in ([value] if isinstance(value, str) else value or []):
            check_model(ref)
    configs = request.get("configs") or ([request["config"]] if request.get("config") else [])
    for spec in [request.get(k) for k in REQUEST_DATA] + [c.get("data") for c in configs]:
        policy.check_data(spec)


_FIRST_RUNS: set[str] = set()
_FIRST_RUN_LOCK = threading.RLock()


@contextmanager
def first_run_alone(page: str) -> Iterator[None]:
    """Run a page's first execution in this server process alone. Why: that run imports symalign
    (and torch) for the first time, and a rerun or a second visitor starting the same imports on
    another thread meanwhile can meet Python's import deadlock guard, which hands one of them a
    partially initialised module (seen on a loaded machine: "cannot import name 'FAMILIES' from
    partially initialized module 'symalign.models.io'"). Later runs of the page, with everything
    imported, go on side by side."""
    if page in _FIRST_RUNS:
        yield
        return
    with _FIRST_RUN_LOCK:
        try:
            yield
        finally:
            _FIRST_RUNS.add(page)
