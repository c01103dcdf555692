"""A seminar: N browsers open Home of one shared app and click the guided demo at once.

    python -m benchmarks.seminar [--sessions 1 5 20] [--recipe vit-digits]

One fresh server (`symalign app --share`, an empty data folder) and one headless Debian chromium with
a browser context per visitor (each its own Streamlit session). Rounds run in the order given:
the first round computes the demo (its time is "one demo alone"); later rounds ask for the same
seeded demo, which the app answers from the run history (symalign.runs.reuse). `--cold N` runs one
more round of N visitors on another fresh server, where all N click before anything is computed:
they wait on one computation instead of running N. Prints every visitor's seconds from the click to
the demo's results and any error, then per round the slowest against one demo alone.
Goal (issue #27): after the first, 20 visitors all finish with no error, the slowest within one demo's time."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from research.browser import CHROMIUM, CHROMIUM_FLAGS, served_app

RESULT = "2 · Two seeds trained apart"  # the demo's second part has painted its results


async def visitor(browser, url: str, recipe: str, timeout_s: float, ready: asyncio.Event) -> dict:
    """One visitor, its own browser context (its own cookies and Streamlit session): open Home, click, wait."""
    out = {"seconds": None, "error": ""}
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        page = await context.new_page()
        await page.goto(url, timeout=timeout_s * 1000)
        button = page.get_by_role("button", name="Run the guided demo")
        await button.wait_for(timeout=timeout_s * 1000)
        if recipe != "vit-digits":
            await page.get_by_label("zoo recipe").click()
            await page.get_by_role("option", name=recipe).click()
        await ready.wait()  # everyone clicks together
        start = time.perf_counter()
        await button.click()
        await page.get_by_text(RESULT).first.wait_for(timeout=timeout_s * 1000)
        out["seconds"] = time.perf_counter() - start
        errors = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
        if await errors.count():
            out["error"] = (await errors.first.inner_text())[:120]
    except Exception as exc:  # a timeout or a crash is this visitor's error, not the benchmark's
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    finally:
        await context.close()
    return out


async def _round(url: str, n: int, recipe: str, timeout_s: float) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            ready = asyncio.Event()
            tasks = [asyncio.create_task(visitor(browser, url, recipe, timeout_s, ready)) for _ in range(n)]
            await asyncio.sleep(min(60.0, 5.0 + 1.5 * n))  # every visitor's Home has painted
            ready.set()
            return list(await asyncio.gather(*tasks))
        finally:
            await browser.close()


def one_round(url: str, n: int, recipe: str, timeout_s: float) -> list[dict]:
    return asyncio.run(_round(url, n, recipe, timeout_s))


def report(label: str, results: list[dict], alone: float | None) -> None:
    times = [r["seconds"] for r in results if r["seconds"] is not None]
    errors = [r["error"] for r in results if r["error"]]
    each = " ".join(f"{r['seconds']:.1f}" if r["seconds"] is not None else "—" for r in results)
    slowest = max(times) if times else float("nan")
    ratio = f", slowest / one demo alone {slowest / alone:.2f}" if alone and times else ""
    print(f"{label}: {len(times)}/{len(results)} finished, slowest {slowest:.1f} s{ratio}, errors {len(errors)}")
    print(f"  seconds: {each}")
    for e in dict.fromkeys(errors):
        print(f"  error: {e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument("--cold", type=int, default=0, help="also N visitors at once on a fresh server")
    parser.add_argument("--recipe", default="vit-digits")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    alone = None
    with tempfile.TemporaryDirectory() as folder, served_app(Path(folder), "--share") as (url, _, _):
        for i, n in enumerate(args.sessions):
            results = one_round(url, n, args.recipe, args.timeout)
            if i == 0 and n == 1 and results[0]["seconds"] is not None:
                alone = results[0]["seconds"]
            report(f"N = {n}" + (" (computes the demo)" if i == 0 else " (same demo again)"), results, alone)
    if args.cold:
        with tempfile.TemporaryDirectory() as folder, served_app(Path(folder), "--share") as (url, _, _):
            report(f"N = {args.cold} at once on a fresh server", one_round(url, args.cold, args.recipe, args.timeout),
                   alone)


if __name__ == "__main__":
    main()
