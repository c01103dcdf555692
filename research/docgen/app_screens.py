"""Every page of the app at 1280×720, as a new user sees it after a few runs: one viewport screenshot per
page in docs/screenshots/pages/<page>.png (what docs/app.md shows), the guided demo just finished
(home-demo.png: what the click brings into view), and the text-cut check of the layout test on each
page, printed.

    python -m research.docgen.app_screens [--out docs/screenshots/pages] [--pages home align …] [--no-demo]

Needs Debian's chromium (the browser tests' setup). Starts the app (`symalign app`) on a fresh data
folder and records, from the command line, a barrier and two alignments of vit-digits seeds 0 and 1, the
quick grid and two simplex surfaces, so Interpolation, Compare, Ablations, Runs, Simplex and Spectra have
something to show."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from research.browser import chromium, served_app, settle

PAGES = ("home", "models", "symmetries", "align", "interpolation", "compare", "ablations", "runs", "jobs", "merge",
         "simplex", "spectra", "anatomy", "paths")
VIEWPORT = {"width": 1280, "height": 720}
# the layout test's check (tests/test_browser_layout.py reads it from here): text overflowing a clipped
# box, a word broken across two lines, an element wider than the page
CUT_TEXT = """() => {
  const out = [];
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const skip = el => el.closest('.js-plotly-plot') || el.closest('[data-testid="stDataFrame"]') || el.closest('svg');
  for (const el of main.querySelectorAll('*')) {
    if (skip(el) || !(el.innerText || '').trim()) continue;
    const style = getComputedStyle(el);
    const clips = ['hidden', 'clip'].includes(style.overflowX) || style.textOverflow === 'ellipsis';
    if (clips && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
      out.push('cut: ' + el.innerText.trim().slice(0, 80));
    }
  }
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    if (!node.parentElement || skip(node.parentElement)) continue;
    for (const m of node.data.matchAll(/[^\\s\\/-]{4,}/g)) {
      const r = document.createRange();
      r.setStart(node, m.index);
      r.setEnd(node, m.index + m[0].length);
      const rects = [...r.getClientRects()].filter(x => x.width > 0);
      if (rects.length > 1 && Math.abs(rects[0].top - rects[rects.length - 1].top) > 2) out.push('broken: ' + m[0]);
    }
  }
  for (const el of main.querySelectorAll('input')) {
    if (el.type !== 'range' && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) out.push('cut: ' + el.value);
  }
  for (const el of main.querySelectorAll('[data-testid="stSelectbox"] div')) {
    if (el.children.length === 0 && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
      out.push('cut: ' + el.innerText);
    }
  }
  main.querySelectorAll('[data-testid="stDataFrame"]').forEach((frame, i) => {
    if (frame.closest('[class*="st-key-every-metric-"]')) return;  // every metric: scrolls in its own box
    const grid = frame.querySelector('.dvn-scroller');
    if (grid && grid.scrollWidth > grid.clientWidth + 1) {
      const head = [...frame.querySelectorAll('[role="columnheader"]')].map(h => h.innerText).join(', ');
      out.push('table scrolls sideways (' + grid.scrollWidth + ' px in ' + grid.clientWidth + '): '
               + head.slice(0, 120));
    }
  });
  const scroller = document.querySelector('[data-testid="stMain"]');
  if (scroller && scroller.scrollWidth > scroller.clientWidth + 1) {
    out.push('page scrolls sideways: ' + scroller.scrollWidth + ' px in ' + scroller.clientWidth);
  }
  return [...new Set(out)];
}"""


def symalign(home: Path, *args: str) -> None:
    env = dict(os.environ, SYMALIGN_HOME=str(home))
    subprocess.run([sys.executable, "-m", "symalign.cli", *args], env=env, check=True, capture_output=True)


def record_runs(home: Path) -> None:
    a, b = "zoo:vit-digits/0", "zoo:vit-digits/1"
    symalign(home, "barrier", a, b, "--points", "11")
    symalign(home, "align", a, b, "--classes", "permutations", "--barrier", "--points", "11", "--out",
             str(home / "perm"))
    symalign(home, "align", a, b, "--method", "learned", "--data", "digits", "--steps", "100", "--classes", "all",
             "--barrier", "--points", "11", "--out", str(home / "learned"))
    symalign(home, "sweep", "--preset", "quick", "--family", "vit-digits", "--points", "11", "--max-examples", "256")
    for method in ("none", "weight"):
        symalign(home, "simplex", a, b, "zoo:vit-digits/2", "--method", method, "--classes", "all", "--resolution",
                 "8", "--max-examples", "256")


def open_page(page, url: str, name: str) -> list[str]:
    """Open `name` (home is "") and wait for it to paint; its cut text."""
    page.goto(f"{url}/{'' if name == 'home' else name}")
    page.locator('[data-testid="stSidebarNavLink"]').first.wait_for(timeout=60_000)
    settle(page)
    return page.evaluate(CUT_TEXT)


def demo(page, url: str, out: Path, steps: int = 100) -> None:
    """Home after the guided demo's click, once its part 2 landed: the view the click scrolled to."""
    open_page(page, url, "home")
    box = page.locator('input[aria-label="learned matching steps"]')
    box.fill(str(steps))
    box.press("Enter")
    settle(page)
    page.locator("button", has_text="Run the guided demo").first.click()
    page.get_by_text("What this shows.").first.wait_for(timeout=600_000)
    settle(page)
    page.screenshot(path=str(out / "home-demo.png"))
    page.get_by_text("2 · Two seeds trained apart").first.evaluate(  # below Streamlit's header bar
        "e => { e.scrollIntoView({block: 'start'}); let p = e.parentElement;"
        " while (p && p.scrollHeight <= p.clientHeight) p = p.parentElement; if (p) p.scrollTop -= 70; }")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(out / "home-demo-part2.png"))
    cut = page.evaluate(CUT_TEXT)
    print("home after the demo: " + ("; ".join(cut) if cut else "nothing cut"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/screenshots/pages")
    parser.add_argument("--no-demo", action="store_true", help="skip the guided demo's screenshot (a minute)")
    parser.add_argument("--pages", nargs="+", choices=PAGES, default=list(PAGES))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, served_app(Path(folder)) as (url, _, home), chromium() as browser:
        record_runs(home)
        page = browser.new_context(viewport=VIEWPORT).new_page()
        for name in args.pages:
            cut = open_page(page, url, name)
            page.screenshot(path=str(out / f"{name}.png"))
            print(f"{name}: " + ("; ".join(cut) if cut else "nothing cut"))
        if not args.no_demo:
            demo(page, url, out)


if __name__ == "__main__":
    main()
