"""Overlap checks for exported figures (issue #56: in an SVG export the legend sat over the λ axis
title; in a PNG the legend's entries overlapped and the last was cut off).

A figure exported by kaleido is loaded back into chromium and the boxes the browser lays out are
read: every legend entry, the legend as a whole, axis titles, tick labels, subplot titles and the
plotting areas. The export is what a reader gets, so the check runs on the file, not the page."""

from __future__ import annotations

from itertools import combinations

Box = tuple[float, float, float, float]  # x0, y0, x1, y1

READ_BOXES = """() => {
  const svg = document.querySelector('svg');
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const all = sel => Array.from(document.querySelectorAll(sel)).filter(e => {
    const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).map(box);
  return {
    canvas: [0, 0, parseFloat(svg.getAttribute('width')), parseFloat(svg.getAttribute('height'))],
    entries: Array.from(document.querySelectorAll('g.legend g.traces')).map(e => ({
      name: e.textContent, box: box(e.querySelector('text.legendtext') || e)})),
    legend: all('g.legend rect.bg'),
    titles: all('g.infolayer g[class$="title"] text'),
    ticks: all('g.xtick text, g.ytick text'),
    annotations: all('g.annotation text'),
    plots: all('g.cartesianlayer g.subplot rect.bg, g.bglayer rect.bg'),
  };
}"""


def overlap(a: Box, b: Box, slack: float = 1.0) -> bool:
    """Whether two boxes share more than a `slack`-pixel sliver."""
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def inside(a: Box, canvas: Box, slack: float = 1.0) -> bool:
    return a[0] >= canvas[0] - slack and a[1] >= canvas[1] - slack and a[2] <= canvas[2] + slack \
        and a[3] <= canvas[3] + slack


def read_boxes(page, svg: str) -> dict:
    """The laid-out boxes of an exported SVG, shown alone in a blank chromium page."""
    page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
    return page.evaluate(READ_BOXES)


def layout_problems(boxes: dict) -> list[str]:
    """What a reader of the export would see wrong: legend entries on top of each other or cut off by
    the canvas edge, the legend over an axis title, a tick label, a subplot title or the data."""
    problems = []
    entries = boxes["entries"]
    for a, b in combinations(entries, 2):
        if overlap(a["box"], b["box"]):
            problems.append(f"legend entries overlap: {a['name']!r} and {b['name']!r}")
    for entry in entries:
        if not inside(entry["box"], boxes["canvas"]):
            problems.append(f"legend entry cut off by the canvas: {entry['name']!r}")
    for legend in boxes["legend"]:
        for what in ("titles", "ticks", "annotations", "plots"):
            for other in boxes[what]:
                if overlap(legend, other):
                    problems.append(f"the legend covers {what[:-1]} at {[round(v) for v in other]}")
    return problems
