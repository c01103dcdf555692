"""The barrier against width: a sweep's cells regrouped by the width of their models.

Why a view of its own: the literature's claim that linear mode connectivity after alignment
emerges with width (Entezari et al.; Ainsworth et al. Fig. 4; Theus et al.) is a curve, not a
table of pairs. Cells whose models belong to a width family (symalign.train.recipes.WIDTHS)
are grouped by width; each sweep row gets its barrier (mean ± std over the cells at that width)
and the share of the vanilla barrier it closes at that width."""

from __future__ import annotations

import math
import statistics

import pandas as pd

from symalign.train.recipes import WIDTH_OF

VANILLA = "vanilla"


def width_of(reference: str) -> int | None:
    """zoo:RECIPE/SEED -> the width of RECIPE when it is a width-family member, else None."""
    if not reference.startswith("zoo:"):
        return None
    return WIDTH_OF.get(reference[len("zoo:"):].partition("/")[0])


def width_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One line per (width, row): barrier mean and std over that width's cells, and `closed`, the
    share of the same width's vanilla barrier the row removes (NaN without a vanilla row). Empty when
    the cells do not span two widths of a family, so callers can show it whenever it means something."""
    columns = ["width", "row", "barrier", "std", "n", "closed"]
    if cells.empty:
        return pd.DataFrame(columns=columns)
    widths = cells["a"].map(width_of)
    same = widths.notna() & (widths == cells["b"].map(width_of))
    mine = cells[same & cells["barrier"].notna()].assign(width=widths[same])
    if mine["width"].nunique() < 2:
        return pd.DataFrame(columns=columns)
    lines = []
    for width, at_width in mine.groupby("width", sort=True):
        vanilla = at_width[at_width["row"] == VANILLA]["barrier"].tolist()
        base = statistics.mean(vanilla) if vanilla else math.nan
        for row in dict.fromkeys(cells["row"]):  # the sweep's row order
            values = at_width[at_width["row"] == row]["barrier"].tolist()
            if not values:
                continue
            mean = statistics.mean(values)
            lines.append({"width": int(width), "row": row, "barrier": mean,
                          "std": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values),
                          "closed": 1 - mean / base if base > 0 else math.nan})
    return pd.DataFrame(lines, columns=columns)


def width_text(table: pd.DataFrame, digits: int = 4, markdown: bool = False) -> str:
    """The table as text: a line per width, a column per row, each aligned row's share closed beside its
    barrier; as the CLI prints it, or (`markdown`) as the report's table."""
    if table.empty:
        return ""
    rows = list(dict.fromkeys(table["row"]))
    if markdown:
        lines = ["| width | " + " | ".join(rows) + " |", "|---|" + "---|" * len(rows)]
    else:
        lines = ["width | " + " | ".join(r + ("" if r == VANILLA else " (closed)") for r in rows)]
    for width, at_width in table.groupby("width", sort=True):
        by_row = {r["row"]: r for r in at_width.to_dict(orient="records")}
        cells = []
        for r in rows:
            line = by_row.get(r)
            if line is None:
                cells.append("–")
                continue
            closed = "" if r == VANILLA or math.isnan(line["closed"]) else f" ({100 * line['closed']:.1f}%)"
            cells.append(f"{line['barrier']:.{digits}f}{closed}")
        lines.append(f"| {width} | " + " | ".join(cells) + " |" if markdown else f"{width} | " + " | ".join(cells))
    return "\n".join(lines)


LITERATURE = ("Entezari et al. (2022) and Ainsworth et al. (2023, Fig. 4)",
              "the barrier left after alignment shrinks as models widen: linear mode connectivity after alignment "
              "emerges with width")


def width_claim(table: pd.DataFrame) -> str:
    """The literature's claim and whether the table agrees, decided from the numbers: per alignment,
    the share closed at the narrowest and the widest width, and whether it rose at every step."""
    if table.empty:
        return ""
    verdicts, parts = [], []
    for row, mine in table[table["row"] != VANILLA].groupby("row", sort=False):
        ordered = mine.sort_values("width")
        closed, barriers = ordered["closed"].tolist(), ordered["barrier"].tolist()
        widths = ordered["width"].tolist()
        if len(closed) < 2 or any(math.isnan(c) for c in closed):
            continue
        steps = [b >= a - 0.005 for a, b in zip(closed, closed[1:])]  # half a point: the seed-to-seed noise floor
        rises = closed[-1] > closed[0]
        verdicts.append(rises)
        how = "rising at every step" if all(steps) else f"rising at {sum(steps)} of {len(steps)} steps"
        parts.append(f"{row} closes {100 * closed[0]:.1f}% at width {widths[0]} and {100 * closed[-1]:.1f}% at "
                     f"width {widths[-1]} ({how}; the barrier it leaves {barriers[0]:.3f} → {barriers[-1]:.3f})")
    if not parts:
        return ""
    who, what = LITERATURE
    verdict = ("agrees" if all(verdicts) else "agrees in part" if any(verdicts) else "does not agree")
    vanilla = table[table["row"] == VANILLA].sort_values("width")["barrier"].tolist()
    scale = (f" The vanilla barrier itself goes {vanilla[0]:.3f} → {vanilla[-1]:.3f}, so the share closed, not the "
             "barrier left, is what compares widths.") if len(vanilla) > 1 else ""
    return f"{who}: {what}. Here {'; '.join(parts)}.{scale} The zoo {verdict} (share closed, one seed pair a width)."
