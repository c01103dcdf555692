"""Shared by the browser tests: Debian's chromium (skip, or fail in CI, without it), and the app
served by `symalign app` (the README's command) on a free port with its own data folder
(symalign.browser, which the benchmarks and the docs' screenshots use too)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from symalign.browser import CHROMIUM, CHROMIUM_FLAGS, chromium, free_port, served_app, settle, wait_healthy

__all__ = ["CHROMIUM", "CHROMIUM_FLAGS", "chromium", "free_port", "require_chromium", "served_app", "settle",
           "wait_healthy"]


def require_chromium() -> None:
    """Skip the calling test module without chromium, unless CI demands the browser tests."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("SYMALIGN_REQUIRE_BROWSER") == "1":
            raise RuntimeError("SYMALIGN_REQUIRE_BROWSER=1 but no chromium: apt-get install -y chromium")
        pytest.skip("no chromium on this machine (apt-get install -y chromium)", allow_module_level=True)
