"""The app as a seminar sees it (issue #56): screenshots at 1600×1000 and 1280×720 of Home in projector
view after the guided demo and of Compare with ten runs over three pairs; Compare's figure exported
as SVG and PNG and rendered back; and the λ panel's update time on Interpolation.

    python -m research.docgen.seminar_screens [--out docs/screenshots/seminar] [--demo-steps 150] [--parts …]

Needs Debian's chromium (the browser tests' setup). Starts the app (`symalign app`) on a fresh data
folder, records the runs from the command line, drives chromium, and prints what fits in each
viewport, the export check and the timings. Screenshots are of the viewport, not the whole page:
what a room sees without scrolling."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from research.browser import chromium, served_app
from research.figure_boxes import layout_problems, read_boxes

SIZES = ((1600, 1000), (1280, 720))
PAIRS = ((0, 1), (0, 2), (1, 2))
PARTS = ("home", "compare", "export", "lambda")


def symalign(home: Path, *args: str) -> str:
    env = dict(os.environ, SYMALIGN_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "symalign.cli", *args], env=env, check=True, capture_output=True,
                          text=True).stdout


def record_runs(home: Path) -> list[str]:
    """Ten runs over three vit-digits pairs: vanilla, weight (permutations), weight (all) on each, and
    activation on the first; their ids."""
    def run_id(*args: str) -> str:
        return re.search(r'"run": "([^"]+)"', symalign(home, *args, "--json")).group(1)

    ids = []
    for i, j in PAIRS:
        a, b = f"zoo:vit-digits/{i}", f"zoo:vit-digits/{j}"
        ids.append(run_id("barrier", a, b))
        for classes in ("permutations", "all"):
            out = str(home / f"{i}{j}{classes}")
            ids.append(run_id("align", a, b, "--classes", classes, "--barrier", "--out", out))
    ids.append(run_id("align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "activation", "--data", "digits",
                      "--classes", "all", "--barrier", "--out", str(home / "01activation")))
    return ids


def in_view(page, locator, height: int) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def home_screens(page, url: str, out: Path, steps: int) -> list[str]:
    said = []
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{url}/?view=projector")
    page.get_by_text("Guided demo", exact=True).wait_for(timeout=60_000)
    box = page.locator('input[aria-label="learned matching steps"]')
    box.fill(str(steps))
    box.press("Enter")
    page.wait_for_timeout(1000)
    began = time.time()
    page.locator("button", has_text="Run the guided demo").first.click()
    page.get_by_text("2 · Two seeds trained apart", exact=True).wait_for(timeout=900_000)
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
    said.append(f"demo ({steps} learned steps) finished in {time.time() - began:.0f} s")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        numbers = page.locator('[data-testid="stMetric"]', has_text="learned matching").first
        # part 2's numbers at the top of the screen, as a lecturer scrolls to them
        numbers.evaluate("e => { e.scrollIntoView({block: 'start'}); let p = e.parentElement;"
                         " while (p && p.scrollHeight <= p.clientHeight) p = p.parentElement;"
                         " if (p) p.scrollTop -= 70; }")  # below Streamlit's header bar
        page.wait_for_timeout(1500)
        slider = page.get_by_role("slider").first
        figure = page.locator(".js-plotly-plot").nth(1)
        fits = {name: in_view(page, loc, height) for name, loc in
                (("numbers", numbers), ("λ slider", slider), ("curves", figure))}
        page.screenshot(path=str(out / f"home-projector-{width}x{height}.png"))
        said.append(f"Home, projector, {width}×{height}: " + ", ".join(f"{k} {'in view' if v else 'NOT in view'}"
                                                                     for k, v in fits.items()))
    return said


def compare_screens(page, url: str, out: Path, ids: list[str]) -> list[str]:
    said = []
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{url}/compare?runs={','.join(ids)}")
        page.get_by_text(re.compile(r"10 runs over 3 model pairs")).first.wait_for(timeout=60_000)
        page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)
        page.screenshot(path=str(out / f"compare-{width}x{height}.png"))
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)
        page.screenshot(path=str(out / f"compare-figure-{width}x{height}.png"))
        said.append(f"Compare, {width}×{height}: screenshots of the table and of the figure")
    return said


def exports(page, url: str, out: Path, ids: list[str]) -> list[str]:
    """Compare's figure through its SVG button and the camera button's PNG, each opened back in chromium."""
    said = []
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{url}/compare?runs={','.join(ids)}")
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    page.wait_for_timeout(2000)
    with page.expect_download(timeout=120_000) as svg_download:
        page.get_by_role("button", name="SVG", exact=True).first.click()
    svg = Path(svg_download.value.path()).read_text()
    (out / "compare-export.svg").write_text(svg)
    page.locator(".js-plotly-plot").first.hover()
    with page.expect_download(timeout=120_000) as png_download:
        page.locator('.js-plotly-plot .modebar-btn[data-title*="download" i]').first.click()
    png = out / "compare-export.png"
    png.write_bytes(Path(png_download.value.path()).read_bytes())
    viewer = page.context.new_page()
    problems = layout_problems(read_boxes(viewer, svg))
    viewer.screenshot(path=str(out / "compare-export-svg-rendered.png"), full_page=True)
    viewer.goto(png.resolve().as_uri())
    viewer.screenshot(path=str(out / "compare-export-png-rendered.png"), full_page=True)
    viewer.close()
    said.append(f"exported SVG ({len(svg)} bytes) read back: " + ("no overlaps" if not problems else
                                                                  "; ".join(problems)))
    said.append(f"camera-button PNG: {png.stat().st_size} bytes, rendered back to compare-export-png-rendered.png")
    return said


def lambda_timing(page, url: str, home: Path) -> list[str]:
    """Seconds from a λ key press to the model-at-λ panel showing the new λ's text, on gpt-shakespeare."""
    out = symalign(home, "align", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--classes", "all", "--barrier",
                   "--out", str(home / "gpt01"), "--json")
    aligned = re.search(r'"run": "([^"]+)"', out).group(1)
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{url}/interpolation?runs={aligned}")  # that run alone, whatever else the history holds
    panel = page.locator('[data-testid="stCode"]')
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stCode\"]')]"
                           ".filter(e => e.innerText.trim().startsWith('ROMEO')).length === 2", timeout=180_000)
    thumb = page.get_by_role("slider").first
    times = []
    for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft", "ArrowRight", "End", "Home"):
        before = "\n".join(panel.all_inner_texts())
        marker = page.evaluate("() => document.querySelector('.js-plotly-plot').layout.shapes[0].x0")
        began = time.time()
        thumb.focus()
        thumb.press(key)
        page.wait_for_function("(m) => document.querySelector('.js-plotly-plot').layout.shapes[0].x0 !== m",
                               arg=marker, timeout=120_000)
        page.wait_for_function("(b) => { const t = [...document.querySelectorAll('[data-testid=\"stCode\"]')]"
                               ".map(e => e.innerText).join('\\n'); return t !== b && !document.querySelector("
                               "'[data-testid=\"stStatusWidget\"]'); }", arg=before, timeout=120_000)
        times.append((key, time.time() - began))
    return ["λ panel updates (key: seconds; the first move computes, a return to a λ seen before is cached): "
            + ", ".join(f"{k} {s:.2f}" for k, s in times)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/screenshots/seminar")
    parser.add_argument("--demo-steps", type=int, default=150)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, served_app(Path(folder)) as (url, _, home), chromium() as browser:
        ids = record_runs(home) if {"compare", "export"} & set(args.parts) else []
        page = browser.new_context(viewport={"width": 1600, "height": 1000}, accept_downloads=True).new_page()
        lines = home_screens(page, url, out, args.demo_steps) if "home" in args.parts else []
        lines += compare_screens(page, url, out, ids) if "compare" in args.parts else []
        lines += exports(page, url, out, ids) if "export" in args.parts else []
        lines += lambda_timing(page, url, home) if "lambda" in args.parts else []
    print("\n".join(lines))
    title = "# The app at seminar sizes (research/docgen/seminar_screens.py)\n\n"
    (out / f"README-{'-'.join(args.parts)}.md").write_text(title + "\n".join(f"- {line}" for line in lines) + "\n")


if __name__ == "__main__":
    main()
