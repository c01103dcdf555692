"""How soon the app shows its pages: Home's first paint from a cold server, then later pages.

For each of `--runs` fresh servers (`symalign app --headless`, its own empty data folder), headless
Debian chromium opens Home as the server's first visitor and the script times, from the request,
until Home's title and its demo button are on screen ("first paint": the server had imported
nothing of the page yet). The same tab then opens other pages by their sidebar links and times
each until its heading is on screen. Each run first times a bare Streamlit page (a title and a
button, its own cold server) in the same browser: Home's ratio to it is the goal (at most 2x).
Prints each run, the medians and the ratio.

    python -m benchmarks.first_paint [--runs 3] [--pages Models Align Simplex]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from research.browser import chromium, served_app

HEADINGS = {"Models": "The shipped zoo", "Align": "Symmetries to use", "Interpolation": "Interpolation curves",
            "Simplex": "Loss over the simplex of three models", "Run history": "Run history"}


def one_run(pages: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder, served_app(Path(folder)) as (url, _, _), chromium() as browser:
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        start = time.perf_counter()
        page.goto(url)
        page.get_by_role("heading", name="symalign").first.wait_for(timeout=60_000)
        page.get_by_role("button", name="Run the guided demo").wait_for(timeout=60_000)
        times = {"Home (cold)": time.perf_counter() - start}
        for name in pages:
            start = time.perf_counter()
            page.locator('[data-testid="stSidebarNavLink"]').filter(has_text=name).first.click()
            page.get_by_text(HEADINGS[name]).first.wait_for(timeout=60_000)
            times[name] = time.perf_counter() - start
        return times


BARE = "import streamlit as st\n\nst.title('bare')\nst.button('go')\n"


def one_bare() -> float:
    """A bare Streamlit page (a title and a button) from a cold server, in the same browser: the
    baseline Home is measured against (issue #43: within 2x of it)."""
    import subprocess

    from research.browser import free_port, wait_healthy

    with tempfile.TemporaryDirectory() as folder, chromium() as browser:
        script = Path(folder) / "bare.py"
        script.write_text(BARE)
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
                                   "--server.port", str(port), "--browser.gatherUsageStats", "false"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
        try:
            url = f"http://127.0.0.1:{port}"
            if not wait_healthy(url, 60):
                raise RuntimeError("the bare Streamlit page did not start")
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            start = time.perf_counter()
            page.goto(url)
            page.get_by_role("heading", name="bare").first.wait_for(timeout=60_000)
            page.get_by_role("button", name="go").wait_for(timeout=60_000)
            return time.perf_counter() - start
        finally:
            server.terminate()
            server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", nargs="*", default=["Models", "Align", "Simplex"], choices=list(HEADINGS))
    args = parser.parse_args()
    results = []
    for i in range(args.runs):
        results.append({"bare Streamlit page (cold)": one_bare(), **one_run(args.pages)})
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in results[-1].items()), flush=True)
    print("\n| page | median s | runs |\n|---|---|---|")
    for key in results[0]:
        values = [r[key] for r in results]
        print(f"| {key} | {statistics.median(values):.2f} | {', '.join(f'{v:.2f}' for v in values)} |")
    home = statistics.median(r["Home (cold)"] for r in results)
    bare = statistics.median(r["bare Streamlit page (cold)"] for r in results)
    print(f"\nHome's cold first paint / a bare Streamlit page's: {home / bare:.2f}x (goal: at most 2x)")


if __name__ == "__main__":
    main()
