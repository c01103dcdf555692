"""A shared app (`symalign app --share`): every visitor is a guest who can reach no host path,
deletes and cancels only what their session started, trains only with the host's leave, and is
capped in uploads and queued jobs; a passphrase is asked before any page."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import symalign.ui.access as access
from symalign.errors import SymalignError
from symalign.jobs.queue import JobQueue
from symalign.runs import RunStore
from symalign.zoo import resolve_zoo

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["home", "models", "symmetries", "align", "interpolation", "compare", "runs", "jobs", "simplex", "spectra",
         "ablations", "merge"]
# Text a guest may type: an upload's name, transport's α values, and the run filters' "model contains"
# (KEY-model, matched against the history's names). None of them is read as a path.
GUEST_TEXT_INPUTS = {"upload-name", "transport-alpha"}  # names and numbers


def harmless(key: str) -> bool:
    return key in GUEST_TEXT_INPUTS or key.endswith("-model") or key.startswith("blocks:")  # block ranges


@pytest.fixture
def guest(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(access.GUEST, "1")
    monkeypatch.setenv(access.TRAINING, "0")
    monkeypatch.delenv(access.PASSWORD, raising=False)
    monkeypatch.setattr("symalign.ui.jobs.ensure_worker", lambda queue: False)  # the jobs stay queued
    return tmp_path / "home"


def page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "app_pages" / f"{name}.py"), default_timeout=120)


def clean(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("name", PAGES)
def test_a_guest_is_offered_no_field_that_takes_a_host_path(guest, name):
    at = clean(page(name).run())
    typed = {t.key for t in at.text_input}
    assert all(harmless(k) for k in typed), typed
    for box in at.selectbox:  # model pickers list models, never the "type a directory" entry
        assert not any("local directory" in str(o) for o in box.options), (box.key, box.options)


def test_the_host_has_the_fields_a_guest_lacks(tmp_path, monkeypatch):
    """The same pages for the host (the test above would pass on a page without inputs)."""
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(access.GUEST, raising=False)
    at = clean(page("models").run())
    assert "link-path" in {t.key for t in at.text_input}
    at = clean(page("align").run())
    assert any("local directory" in str(o) for o in at.selectbox(key="align-a").options)
    assert f"align-data:{at.selectbox(key='align-a').value}" in {t.key for t in at.text_input}


def test_host_paths_are_refused_wherever_a_guests_request_could_carry_one(guest):
    from symalign.ui.access import Access

    policy = Access(guest=True)
    zoo_dir = str(resolve_zoo("zoo:vit-digits/0"))
    with pytest.raises(SymalignError, match="models it lists"):
        policy.check_model(zoo_dir, {"zoo:vit-digits/0"})  # the same model, but named by a path the guest typed
    policy.check_model("zoo:vit-digits/0", {"zoo:vit-digits/0"})
    for spec in ("text:/etc/passwd", "imagefolder:/", "cifar10:/tmp"):
        with pytest.raises(SymalignError, match="named data sets"):
            policy.check_data(spec)
    policy.check_data("digits")
    with pytest.raises(SymalignError, match="training is off"):
        policy.check_training()
    Access(guest=False).check_model(zoo_dir, set())  # the host may name any path
    Access(guest=False).check_data("text:/etc/passwd")


def test_a_guests_job_naming_a_host_path_is_refused_before_it_is_queued(guest):
    script = """
import streamlit as st
from symalign.ui.jobs import submit_job
from symalign.ui.widgets import user_errors
with user_errors():
    submit_job(st.session_state["kind"], st.session_state["request"])
    st.success("queued")
"""
    zoo_dir = str(resolve_zoo("zoo:vit-digits/0"))
    cases = [("align", {"a": zoo_dir, "b": "zoo:vit-digits/1", "config": {"method": "weight"}}, "models it lists"),
             ("align", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1",
                        "config": {"method": "weight", "data": "text:/etc/passwd"}}, "named data sets"),
             ("merge", {"models": ["zoo:vit-digits/0", "/"], "data": "digits"}, "models it lists"),
             ("transport", {"a": "zoo:vit-digits/0", "a_ft": "zoo:vit-digits-flipped/0", "b": "zoo:vit-digits/1",
                            "alphas": [1], "data_task": "imagefolder:/"}, "named data sets"),
             ("train", {"recipe": "vit-digits", "seed": 0, "steps": 1, "out": "/tmp/x"}, "training is off")]
    for kind, request, message in cases:
        at = AppTest.from_string(script, default_timeout=60)
        at.session_state["kind"], at.session_state["request"] = kind, request
        at.run()
        assert not at.exception and any(message in e.value for e in at.error), (kind, [e.value for e in at.error])
    assert JobQueue(guest / "runs.sqlite").list() == []


def test_a_guest_may_have_two_active_jobs_and_cancel_only_their_own(guest):
    script = """
import streamlit as st
from symalign.ui.jobs import submit_job
from symalign.ui.widgets import user_errors
with user_errors():
    for _ in range(3):
        submit_job("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", "data": "digits"})
"""
    at = AppTest.from_string(script, default_timeout=60).run()
    assert any("2 jobs queued or running at once" in e.value for e in at.error)
    queue = JobQueue(guest / "runs.sqlite")
    mine = queue.list()
    assert len(mine) == 2 and len({j.owner for j in mine}) == 1 and mine[0].owner
    queue.submit("barrier", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1"}, "another visitor's", owner="someone")
    board = clean(page("jobs").run())  # a new session: none of the three is its own
    assert not [b for b in board.button if b.key.startswith("cancel-")]
    assert sum("another visitor's" in c.value for c in board.caption) == 3


def test_a_guest_deletes_only_runs_their_session_started(guest):
    at = page("runs")
    at.run()
    me = at.session_state["symalign-session"]
    store = RunStore(guest / "runs.sqlite", owner="someone else")
    theirs = store.start("barrier", "zoo:vit-digits/0", "zoo:vit-digits/1")
    store.finish(theirs, {"barrier": 0.5})
    mine = RunStore(guest / "runs.sqlite", owner=me).start("barrier", "zoo:vit-digits/0", "zoo:vit-digits/2")
    RunStore(guest / "runs.sqlite").finish(mine, {"barrier": 0.1})
    clean(at.run())
    at.selectbox(key="history-open").set_value(theirs)
    clean(at.run())
    assert not [b for b in at.button if b.key == "history-delete"]
    at.selectbox(key="history-open").set_value(mine)
    clean(at.run())
    at.button(key="history-delete").click()
    clean(at.run())
    assert [r.id for r in RunStore(guest / "runs.sqlite").list()] == [theirs]


def test_a_guests_upload_is_listed_to_them_alone_and_capped(guest):
    import io
    import zipfile

    from symalign.models.upload import import_upload
    from symalign.ui.access import Access

    at = page("align")
    at.run()
    me = at.session_state["symalign-session"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for f in resolve_zoo("zoo:vit-digits/2").iterdir():
            archive.writestr(f"mine/{f.name}", f.read_bytes())
    folder = import_upload([("mine.zip", buffer.getvalue())], guest / "guest_uploads" / me)  # where the page puts it
    clean(at.run())
    assert "your upload: mine" in at.selectbox(key="align-a").options
    other = clean(page("align").run())  # another visitor
    assert "your upload: mine" not in other.selectbox(key="align-a").options
    at.selectbox(key="align-b").set_value("your upload: mine")
    clean(at.run())  # the owner aligns against it
    assert at.session_state["align-config"]["method"] == "weight"
    with pytest.raises(SymalignError, match="models it lists"):  # nobody else can name it
        Access(guest=True).check_model(str(folder), {"zoo:vit-digits/0"})
    policy, size = Access(guest=True), 5 << 20
    policy.check_upload(size, 0, 0)
    with pytest.raises(SymalignError, match="per session"):
        policy.check_upload(size, policy.upload_bytes_per_session - size + 1, 0)
    with pytest.raises(SymalignError, match="full"):
        policy.check_upload(size, 0, policy.upload_bytes_total - size + 1)
    Access(guest=False).check_upload(10 * policy.upload_bytes_total, 0, 0)  # the host is not capped


def test_training_is_the_hosts_unless_allowed(guest, monkeypatch):
    at = clean(page("models").run())
    assert not [b for b in at.button if b.key == "train-go"]
    assert any("Training is off for guests" in i.value for i in at.info)
    monkeypatch.setenv(access.TRAINING, "1")
    at = clean(page("models").run())
    assert [b for b in at.button if b.key == "train-go"]


def test_a_passphrase_is_asked_before_any_page(guest, monkeypatch):
    monkeypatch.setenv(access.PASSWORD, access.digest("sesame"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception and not at.header  # no page: Home's "Guided demo" header is not drawn
    at.text_input(key="passphrase-input").set_value("wrong")
    at.button[0].click().run()
    assert any("not the passphrase" in e.value for e in at.error) and not at.header
    at.text_input(key="passphrase-input").set_value("sesame")
    at.button[0].click().run()
    assert not at.exception and any("Guided demo" in h.value for h in at.header)


def test_a_browser_keeps_one_id_though_its_xsrf_cookie_is_masked_anew_on_every_load():
    """Issue #56: Streamlit writes its XSRF cookie with a fresh random mask on each page load
    ("2|mask|masked token|time"); the browser's id is the token inside, so a reload keeps its owner."""
    import os

    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    from symalign.ui.session import xsrf_token

    token, other = os.urandom(16), os.urandom(16)
    loads = [generate_xsrf_token_string(token) for _ in range(4)]
    assert len(set(loads)) == 4  # the raw value changes on every load
    assert {xsrf_token(c) for c in loads} == {token.hex()}
    assert xsrf_token(generate_xsrf_token_string(other)) != token.hex()
    assert xsrf_token("not-a-v2-cookie") == "not-a-v2-cookie"
