"""What a page that follows a running job costs the machine, with Streamlit's garbage collection after every
script run (its default, `runner.postScriptGC`) and without it (what `symalign app` sets).

A job's panel redraws itself every second (`st.fragment(run_every=1)`, symalign.ui.jobs), and each redraw is a
script run. Streamlit then runs a full `gc.collect(2)`, which walks every object the server holds: with torch and
transformers imported (any page that touched a model) about 0.25 s of CPU. So one tab following the guided demo
kept a quarter of a core busy in the server, on the cores the demo itself needs.

For each setting: a fresh server (its own data folder) and headless chromium run the guided demo with many learned
steps; while its last part runs, the script samples for `--seconds` the CPU of the server, of chromium and of the
job worker (per second of wall), then times `--rounds` rounds of page loads (each of six pages, two of them loading
torch, goto to heading; the demo still running) and reads the server's resident memory after them: turning the
collection off must not let memory grow. Run it on an otherwise idle machine (chromium is counted machine-wide).

    python -m benchmarks.following_cost [--seconds 30] [--rounds 2] [--settings on off]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from research.browser import chromium, free_port, wait_healthy
from symalign.ui.launch import QUIET_WELCOME, app_command

HZ = os.sysconf("SC_CLK_TCK")
PAGES = {"models": "The shipped zoo", "align": "Symmetries to use", "compare": "Compare matchers",
         "runs": "Run history", "symmetries": "What a symmetry does to the weights",
         "interpolation": "Interpolation curves"}


def cpu_of(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / HZ


def chromium_cpu() -> float:
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"chromium" in (entry / "cmdline").read_bytes():
                    total += cpu_of(int(entry.name))
            except OSError:
                pass
    return total


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def holds_torch(pid: int) -> bool:
    """Whether the server has imported torch (its shared library is mapped): what makes a collection slow."""
    return "libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text()


def server_command(port: int, gc_after_runs: bool) -> list[str]:
    command = app_command(port, headless=True)
    if "--runner.postScriptGC" in command:
        command[command.index("--runner.postScriptGC") + 1] = "true" if gc_after_runs else "false"
    else:
        command += ["--runner.postScriptGC", "true" if gc_after_runs else "false"]
    return command


def load_page(page, url: str, name: str) -> float:
    """Open one of PAGES by its address and wait for its heading: the seconds it took."""
    start = time.perf_counter()
    page.goto(f"{url}/{name}")
    page.get_by_text(PAGES[name]).first.wait_for(timeout=60_000)
    return time.perf_counter() - start


@contextmanager
def app_with_setting(gc_after_runs: bool) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """A fresh app server (its own data folder) with the per-run collection on or off: its URL, process, data."""
    with tempfile.TemporaryDirectory() as folder:
        home, port = Path(folder) / "home", free_port()
        env = dict(os.environ, SYMALIGN_HOME=str(home), **QUIET_WELCOME)
        server = subprocess.Popen(server_command(port, gc_after_runs), cwd=folder, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            if not wait_healthy(url, 90):
                raise RuntimeError("the app did not start")
            yield url, server, home
        finally:
            server.terminate()
            server.wait(timeout=30)


def one_setting(gc_after_runs: bool, seconds: float, rounds: int) -> dict[str, float]:
    with app_with_setting(gc_after_runs) as (url, server, home), chromium() as browser:
        page = browser.new_context(viewport={"width": 1400, "height": 1800}).new_page()
        page.goto(url)
        page.get_by_text("Guided demo", exact=True).wait_for(timeout=60_000)
        steps = page.locator('input[aria-label="learned matching steps"]')
        steps.fill("20000")  # the last part outlasts the measurement
        steps.press("Enter")
        page.wait_for_timeout(1000)
        page.locator("button", has_text="Run the guided demo").first.click()
        page.get_by_text("part 3 of 3").first.wait_for(timeout=300_000)
        time.sleep(3)
        row0 = {"torch while following": holds_torch(server.pid)}
        worker = int((home / "worker.pid").read_text())
        before = (cpu_of(server.pid), chromium_cpu(), cpu_of(worker), time.time())
        time.sleep(seconds)
        after = (cpu_of(server.pid), chromium_cpu(), cpu_of(worker), time.time())
        wall = after[3] - before[3]
        row = {**row0, "server": (after[0] - before[0]) / wall, "chromium": (after[1] - before[1]) / wall,
               "worker": (after[2] - before[2]) / wall}
        loads = [load_page(page, url, name) for _ in range(rounds) for name in PAGES]
        row["page load s"] = statistics.median(loads)
        row["server MiB"] = rss_mib(server.pid)
        row["torch"] = holds_torch(server.pid)
        os.kill(worker, 9)
        return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of page loads (each page once a round)")
    parser.add_argument("--settings", nargs="*", default=["on", "off"], choices=["on", "off"])
    args = parser.parse_args()
    print("| gc after each script run | server CPU s/s | chromium CPU s/s | job worker CPU s/s | "
          "median page load s | server MiB | server holds torch (following, after the pages) |")
    print("|---|---|---|---|---|---|---|")
    for setting in args.settings:
        r = one_setting(setting == "on", args.seconds, args.rounds)
        torch = ", ".join("yes" if r[key] else "no" for key in ("torch while following", "torch"))
        print(f"| {setting} | {r['server']:.3f} | {r['chromium']:.3f} | {r['worker']:.3f} | {r['page load s']:.2f} | "
              f"{r['server MiB']:.0f} | {torch} |", flush=True)


if __name__ == "__main__":
    main()
