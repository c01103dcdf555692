"""The app served on a free port with its own data folder, and Debian's chromium driven by playwright:
shared by the browser tests, the seminar and first-paint benchmarks and the docs' screenshots (one
place, so none of them edits sys.path to borrow it). playwright is imported only when a browser starts.
`settle` waits for a page's script run to end, instead of a fixed pause."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                  "--disable-background-networking", "--disable-component-update"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, seconds: float) -> bool:
    """Whether a Streamlit server at `url` answers its health check within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return True
        except OSError:
            time.sleep(0.3)
    return False


@contextmanager
def served_app(folder: Path, *options: str) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """A fresh `symalign app` server (with `options`, e.g. --share): (url, process, data folder)."""
    home, port = folder / "home", free_port()
    env = dict(os.environ, SYMALIGN_HOME=str(home))
    log = open(folder / "streamlit.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "symalign.cli", "app", "--headless", "--port", str(port),
                               *options], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    if not wait_healthy(url, 90):
        server.kill()
        raise RuntimeError("the app did not start: " + (folder / "streamlit.log").read_text()[-2000:])
    try:
        yield url, server, home
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
        log.close()


@contextmanager
def chromium() -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


STATE = """() => [document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state'),
                 (document.querySelector('[data-testid="stMain"]') || document.body).innerText]"""


def settle(page, quiet: float = 0.5, timeout: float = 30.0) -> bool:
    """Wait until the page's script run has ended (Streamlit marks its root `notRunning`) and its main area
    has not changed for `quiet` seconds: what a fixed pause of several seconds only guessed at. False when
    `timeout` passes first (a page that reruns itself on a timer may never settle; it is read as it is)."""
    deadline, last, since = time.time() + timeout, None, time.time()
    while time.time() < deadline:
        state, text = page.evaluate(STATE)
        if state != "notRunning" or text != last:
            last, since = text, time.time()
        elif time.time() - since >= quiet:
            return True
        page.wait_for_timeout(100)
    return False
