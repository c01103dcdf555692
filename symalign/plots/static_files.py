"""SVG, PDF and PNG files of a figure, drawn by kaleido (plotly.js inside a headless Chrome or Chromium).

kaleido 1.x (1.5.1 here) sometimes calls into its page before the page's scripts have run when the
machine is busy: `ReferenceError: kaleido_scopes is not defined`. Two loops of 25 exports beside two
busy cores each met it once (2026-12-02). In the app the SVG download then never came (a full-suite run's
run-link test waited 180 s for it). Each try loads the page again, so a failed draw is tried again:
in a fresh browser, or in a restarted one when `one_browser` holds one for many files."""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

TRIES = 3
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
_held = {"browser": False}  # whether `one_browser` holds kaleido's shared browser in this process


def static_export_missing() -> str | None:
    """Why figures cannot be written as SVG or PDF files here, or None when they can: kaleido draws
    them with plotly.js inside a headless Chrome or Chromium, which it finds installed (it cannot
    download one on a machine without internet)."""
    if importlib.util.find_spec("kaleido") is None:
        return "SVG and PDF files need kaleido (pip install kaleido)"
    if not (os.environ.get("BROWSER_PATH") or any(shutil.which(b) for b in BROWSERS)):
        return "SVG and PDF files need Chrome or Chromium installed (e.g. apt-get install chromium)"
    return None


def figure_file(fig, fmt: str, *, scale: float | None = None, tries: int = TRIES) -> bytes:
    """`fig` as an `fmt` file ("svg", "pdf", "png"): kaleido's bytes, tried up to `tries` times (see the
    module's docstring); the last try's error when every try failed."""
    import kaleido

    for _ in range(tries - 1):
        try:
            return _drawn(fig, fmt, scale)
        except Exception:  # kaleido's JavascriptError is private (kaleido._kaleido_tab); any failure is retried
            if _held["browser"]:  # the held browser's page is the stale one: start it again
                kaleido.stop_sync_server(silence_warnings=True)
                kaleido.start_sync_server(silence_warnings=True)
    return _drawn(fig, fmt, scale)


def _drawn(fig, fmt: str, scale: float | None) -> bytes:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")  # plotly's, for one_browser
        return fig.to_image(format=fmt, scale=scale)


@contextmanager
def one_browser() -> Iterator[None]:
    """One kaleido browser for every `figure_file` inside (0.3 s a file instead of 2.3 s, when each call
    would start its own). For one thread: kaleido's shared browser answers calls in turn, and two threads'
    answers could cross, so the app (many sessions) does not use it."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    _held["browser"] = True
    try:
        yield
    finally:
        _held["browser"] = False
        kaleido.stop_sync_server(silence_warnings=True)
