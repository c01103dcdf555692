"""Shared by the browser tests: Debian's chromium (skip, or fail in CI, without it), and the app
served by `symalign app` (the README's command) on a free port with its own data folder
(research.browser, which the benchmarks and the docs' screenshots use too)."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from research.browser import CHROMIUM, CHROMIUM_FLAGS, chromium, free_port, served_app, settle, wait_healthy

__all__ = ["CHROMIUM", "CHROMIUM_FLAGS", "chromium", "free_port", "recorded", "require_chromium", "served_app",
           "settle", "wait_healthy"]


def require_chromium() -> None:
    """Skip the calling test module without chromium, unless CI demands the browser tests."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("SYMALIGN_REQUIRE_BROWSER") == "1":
            raise RuntimeError("SYMALIGN_REQUIRE_BROWSER=1 but no chromium: apt-get install -y chromium")
        pytest.skip("no chromium on this machine (apt-get install -y chromium)", allow_module_level=True)


def recorded(home: Path, *argv: str) -> dict:
    """`symalign ARGV --json` against the app's data folder `home`, as a terminal beside the app would run it:
    its JSON (with the run it recorded). In this process: a subprocess per run would pay torch's and transformers'
    imports again (about 5 s of CPU each) for runs the browser tests only need to exist."""
    from symalign.cli import main

    out, before = io.StringIO(), os.environ.get("SYMALIGN_HOME")
    os.environ["SYMALIGN_HOME"] = str(home)
    try:
        with redirect_stdout(out):
            code = main([*argv, "--json"])
    finally:
        if before is None:
            os.environ.pop("SYMALIGN_HOME", None)
        else:
            os.environ["SYMALIGN_HOME"] = before
    assert code == 0, f"symalign {' '.join(argv)} exited {code}"
    return json.loads(out.getvalue())
