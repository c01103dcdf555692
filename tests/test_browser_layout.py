"""No text cut at 1280×720 (issue #70: the symmetry grid's headers broke mid-word, "permutati/on"; the
Simplex methods' pills and the transport tab's pickers were cut on the right). Every page of the app, at
a projector's size, is checked in chromium for boxes whose text overflows a clipped box and for words
broken across two lines (a break after a hyphen or a slash is a normal one)."""

from __future__ import annotations

import pytest
from browser_support import chromium, recorded, require_chromium, served_app, settle

pytestmark = pytest.mark.slow

require_chromium()

PAGES = ["", "models", "symmetries", "align", "interpolation", "compare", "ablations", "runs", "jobs", "merge",
         "simplex", "spectra", "anatomy", "paths"]
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
  return [...new Set(out)];
}"""


def test_no_page_cuts_its_text_at_1280_by_720(tmp_path):
    with served_app(tmp_path) as (url, _, home), chromium() as browser:
        # a run, so Compare and Interpolation show tables
        recorded(home, "barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--points", "3", "--max-examples", "16")
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        found = {}
        for name in PAGES:
            page.goto(f"{url}/{name}")
            page.locator('[data-testid="stSidebarNavLink"]').first.wait_for(timeout=60_000)
            settle(page)  # the page's own widgets paint after the navigation (a fixed 5 s before: 70 s of waiting)
            if name == "merge":
                page.get_by_role("tab", name="Carry a fine-tune over").click()
                settle(page)
            cut = page.evaluate(CUT_TEXT)
            if cut:
                found[name or "home"] = cut
        assert not found, found
