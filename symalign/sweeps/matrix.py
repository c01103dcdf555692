"""A sweep's matrix as a reader reads it (issue #70: at 1280×720 mean ± std sat behind a horizontal scroll,
columns were raw names, accuracy showed as 75.0926, an empty pppl_barrier column read "None" on a ViT, and
"weight (permutations)" above vanilla came with no word of why).

Pure functions of the sweep's recorded summary and cells: the Ablations page and the run history show them."""

from __future__ import annotations

import math

import pandas as pd

from symalign.plots.names import pair_label

CELL_NAMES = {"row": "row", "pair": "pair", "seed": "matcher seed", "method": "method", "classes": "classes",
              "barrier": "barrier (above the endpoint line)", "barrier_mean": "barrier (above the mean endpoint loss)",
              "accuracy_barrier": "accuracy barrier (pp)", "pppl_barrier": "pseudo-perplexity barrier",
              "seconds": "seconds", "reused": "reused", "run_id": "run", "error": "error"}
DEFINITIONS = ("barrier (above the endpoint line): max over λ of L(θ(λ)) − ((1−λ)L(A) + λL(B)), the primary one; "
               "barrier (above the mean endpoint loss): max over λ of L(θ(λ)) − ½(L(A) + L(B)), Verma & Elbayad's. "
               "They differ by how far the endpoints' losses differ.")


def _pm(mean, std, digits: int) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if std == std else f"{mean:.{digits}f}"


def _pair_columns(summary: pd.DataFrame) -> dict[str, str]:
    """'zoo:vit-digits/0 ↔ zoo:vit-digits/1' → 'pair 0↔1' when every pair is of one family (the page names it;
    narrow columns keep the matrix inside 1280 pixels), else 'vit-digits 0↔1'."""
    labels = {c: pair_label(c.split(" ↔ ")) for c in summary.columns if " ↔ " in c}
    families = {label.rsplit(" ", 1)[0] for label in labels.values()}
    if len(families) == 1 and all("↔" in label.rsplit(" ", 1)[-1] for label in labels.values()):
        return {c: "pair " + label.rsplit(" ", 1)[1] for c, label in labels.items()}
    return labels


def wrong_way_notes(summary: pd.DataFrame, rows: list[dict] | None = None) -> dict[str, str]:
    """A one-line note for each aligned row whose mean barrier is above the vanilla row's: why it can go
    that way (a lecturer needs it; the numbers alone read as a bug)."""
    means = dict(zip(summary["row"], summary["mean"]))
    vanilla = next((means[r] for r, m in zip(summary["row"], summary["method"]) if m == "none"), None)
    if vanilla is None:
        return {}
    classes = {r["name"]: r.get("classes", {}) for r in rows or []}
    notes = {}
    for row, method in zip(summary["row"], summary["method"]):
        if method == "none" or not means[row] > vanilla:
            continue
        residual = classes.get(row, {}).get("residual", "none")
        why = ("its classes leave the residual stream as it is, so the units and heads it matches are compared "
               "across residual bases that do not correspond, and matching them by weight alone can raise the "
               "midpoint loss; the residual map is the lever (compare the rows with `all`)"
               if residual == "none" else
               "data-free matching can land in a worse basis at this scale (a naive residual fit did so in "
               "the zoo's calibration (docs/zoo.md)); activation or learned matching start from the data")
        notes[row] = f"above vanilla ({means[row]:.2f} > {vanilla:.2f}): {why}."
    return notes


def readable_matrix(summary: pd.DataFrame, rows: list[dict] | None = None) -> pd.DataFrame:
    """Row name, mean ± std and ± SE (n) first; accuracy barrier in points with one decimal; one column per
    pair by its short name; a note where a row goes the unexpected way. Empty columns are left out."""
    out = pd.DataFrame({"row": summary["row"]})
    out["barrier, mean ± std"] = [_pm(m, s, 3) for m, s in zip(summary["mean"], summary["std"])]
    if "sem" in summary:
        out["± SE (n pairs)"] = [f"{s:.3f} ({int(n)})" if s == s else f"– ({int(n)})"
                                 for s, n in zip(summary["sem"], summary["n"])]
    if "accuracy_mean" in summary and summary["accuracy_mean"].notna().any():
        out["accuracy barrier (pp), mean ± std"] = [_pm(m, s, 1) for m, s in
                                                    zip(summary["accuracy_mean"], summary["accuracy_std"])]
    if "rise over all classes" in summary:
        out["rise over all classes"] = summary["rise over all classes"].round(3)
    for raw, short in _pair_columns(summary).items():
        out[short] = summary[raw].astype(float).round(3)
    notes = wrong_way_notes(summary, rows)
    if notes:
        out["note"] = [notes.get(r, "") for r in summary["row"]]
    return out


def readable_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """Every cell with readable column names, the pair by its short name, empty columns left out."""
    cells = cells.copy()
    if {"a", "b"} <= set(cells.columns):
        cells.insert(1, "pair", [pair_label([a, b]) for a, b in zip(cells["a"], cells["b"])])
        cells = cells.drop(columns=["a", "b"])
    cells = cells[[c for c in cells.columns if cells[c].notna().any() and (cells[c].astype(str) != "").any()]]
    for column in ("barrier", "barrier_mean"):
        if column in cells:
            cells[column] = cells[column].astype(float).round(4)
    for column in ("accuracy_barrier", "pppl_barrier", "seconds"):
        if column in cells:
            cells[column] = cells[column].astype(float).round(1 if column != "pppl_barrier" else 3)
    if "seed" in cells:
        cells["seed"] = cells["seed"].astype(int)
    return cells.rename(columns={c: CELL_NAMES.get(c, c) for c in cells.columns})
