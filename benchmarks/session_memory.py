"""Whether the app server's memory levels off over a long seminar, with Streamlit's garbage collection after every
script run (its default, `runner.postScriptGC`) and without it (what `symalign app` sets since issue #73's eighth
round).

Each full page load is a new Streamlit session. The old one lingers for `server.disconnectedSessionTTL` (120 s)
and is then dropped, so the server's resident memory should stop growing a few minutes into a steady stream of
loads. If it keeps growing, something outlives its session. With the per-run collection off, cyclic garbage waits
for Python's own generation-2 collection, which with torch loaded comes later: this measures whether that shows.

For each setting: a fresh server (its own data folder) and one headless chromium tab load the app's pages in
turn (two of them load torch), one after another, for `--minutes`. Every `--every` loads the script prints the
server's resident memory and the sessions Streamlit reports (`/_stcore/metrics`). Run it on an otherwise idle
machine.

    python -m benchmarks.session_memory [--minutes 15] [--every 100] [--settings off on]
"""

from __future__ import annotations

import argparse
import re
import time
import urllib.request

from benchmarks.following_cost import (  # benchmarks/following_cost.py: the same server
    PAGES,
    app_with_setting,
    load_page,
    rss_mib,
)
from research.browser import chromium


def session_counts(url: str) -> str:
    """Streamlit's own counts (`/_stcore/metrics`): sessions connected so far, disconnected so far, active now."""
    try:
        text = urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10).read().decode()
    except OSError:
        return "n/a"
    found = dict(re.findall(r'^(session_events_total\{type="\w+"\}|active_sessions)(?:\{[^}]*\})? (\S+)', text,
                            re.MULTILINE))
    keys = ('session_events_total{type="connect"}', 'session_events_total{type="disconnect"}', "active_sessions")
    return " / ".join(str(int(float(found[key]))) if key in found else "n/a" for key in keys)


def one_setting(gc_after_runs: bool, minutes: float, every: int) -> None:
    with app_with_setting(gc_after_runs) as (url, server, _), chromium() as browser:
        page = browser.new_context(viewport={"width": 1400, "height": 1800}).new_page()
        start, loads, names = time.time(), 0, list(PAGES)

        def report() -> None:
            print(f"| {'on' if gc_after_runs else 'off'} | {loads} | {time.time() - start:.0f} | "
                  f"{rss_mib(server.pid):.0f} | {session_counts(url)} |", flush=True)

        report()
        while time.time() - start < minutes * 60:
            load_page(page, url, names[loads % len(names)])
            loads += 1
            if loads % every == 0:
                report()
        if loads % every:
            report()  # the last loads, when they did not end a block of `every`


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=15.0, help="minutes of page loads per setting")
    parser.add_argument("--every", type=int, default=100, help="print a row every this many loads")
    parser.add_argument("--settings", nargs="*", default=["off", "on"], choices=["on", "off"])
    args = parser.parse_args()
    print("| gc after each script run | page loads | seconds | server MiB | "
          "sessions connected / disconnected / active |")
    print("|---|---|---|---|---|")
    for setting in args.settings:
        one_setting(setting == "on", args.minutes, args.every)


if __name__ == "__main__":
    main()
