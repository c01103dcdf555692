"""Runs as a table: what the Compare page shows and what its CSV download holds."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from symalign.plots.names import pair_label
from symalign.runs.store import Run


def classes_text(classes: dict | None) -> str:
    """'mlp perm, heads perm, residual orthogonal' (kinds left at none omitted)."""
    chosen = [f"{k} {v}" for k, v in (classes or {}).items() if v and v != "none"]
    return ", ".join(chosen) or "none"


BENDS = {"bezier": "Bézier", "polychain": "polygonal chain"}


def curve_text(run: Run) -> str:
    """A fitted-curve run as a reader must tell it from a straight line (issue #70: "weight: none",
    barrier 0.0000, read as a matcher reaching zero): 'curve (Bézier), aligned by weight (all)'."""
    bend = BENDS.get(run.settings.get("bend", ""), run.settings.get("bend", "?"))
    align = run.settings.get("align", "none")
    if align in (None, "none") or (isinstance(align, dict) and align.get("method") == "none"):
        start = "unaligned"
    elif isinstance(align, dict):
        classes = align.get("preset") or classes_text(align.get("classes"))
        start = f"aligned by {align.get('method', run.method)} ({classes})"
    else:  # an alignment folder or an align run's id
        start = f"aligned as {align}"
    return f"curve ({bend}), {start}"


def run_label(run: Run) -> str:
    """A run's name on a page: what it is, its short id and the models it ran on. A given label (a
    grid cell's "quick vit-digits: weight (all)", a user's rename) keeps the id and the pair too: three
    grid cells on three pairs read alike otherwise, and a multiselect keyed by its labels merged them
    into one (issue #70)."""
    models = "" if run.kind == "transport" else f" · {pair_label(run.all_models)}"  # which models (issue #56)
    split = " · train split" if run.settings.get("split") == "train" else ""  # beside its eval twin on one chart
    if run.label:
        return f"{run.label} [{run.id[-6:]}]{models}{split}"
    classes = run.metrics.get("classes") or run.settings.get("config", {}).get("classes")
    if run.kind == "barrier":
        what = "vanilla"
    elif run.kind == "curve":
        what = curve_text(run)
    elif run.kind == "merge":
        what = f"merge {run.settings.get('how', 'average')} ({run.method} alignment) of {len(run.all_models)} models"
    elif run.kind == "transport":
        what = f"transport ({run.method} alignment): {run.settings.get('a_ft', '?')} → {run.model_b}"
    elif run.kind in ("simplex", "align-many", "spectrum"):
        what = f"{run.kind} {run.method}" + ("" if run.kind == "spectrum" else f": {classes_text(classes)}")
    else:
        what = f"{run.method}: {classes_text(classes)}"
    return f"{what} [{run.id[-6:]}]{models}{split}"


def headline_barrier(run: Run) -> float | None:
    """The one barrier a run is compared by: its path's barrier; for a simplex the largest barrier
    above the corner plane; for a universe alignment the largest pairwise barrier (when measured)."""
    m = run.metrics
    if run.kind == "simplex":
        return m.get("max_barrier")
    if run.kind == "align-many":
        pairs = m.get("pairwise") or []
        return max(p["barrier"] for p in pairs) if pairs else None
    return m.get("barrier")


# The Run history page's columns, what a reader looks for first (the barriers in view, not off-screen).
HISTORY_COLUMNS = ["id", "kind", "method", "barrier", "accuracy_barrier", "models", "classes", "state", "barrier_mean",
                   "near_zero_fraction", "loss_at_half", "seconds", "source", "created"]


def flat_table(values: dict, prefix: str = "") -> pd.DataFrame:
    """A nested dict (a run's settings or metrics) as rows of `name` and `value`, nested keys joined by
    dots (`config.classes.mlp`), lists written out: readable where raw JSON is not."""
    rows: list[dict] = []

    def walk(d: dict, at: str) -> None:
        for key, value in d.items():
            name = f"{at}{key}"
            if isinstance(value, dict) and value:
                walk(value, name + ".")
            else:
                text = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value
                rows.append({"name": name, "value": "" if text is None else str(text)})

    walk(values, prefix)
    return pd.DataFrame(rows, columns=["name", "value"])


def runs_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        m = r.metrics
        curve = m.get("curve") or {}
        mid = None
        if curve.get("lambdas"):
            i = min(range(len(curve["lambdas"])), key=lambda j: abs(curve["lambdas"][j] - 0.5))
            mid = curve["loss"][i]
        classes = m.get("classes") or r.settings.get("config", {}).get("classes")
        rows.append({
            "run": run_label(r), "id": r.id, "state": r.state, "kind": r.kind,
            "method": curve_text(r) if r.kind == "curve" else r.method,  # a curve is never read as a matcher
            "classes": classes_text(classes) if r.kind in ("align", "align-many", "simplex") else "none",
            "model_a": r.model_a, "model_b": r.model_b, "models": " · ".join(r.all_models),
            "barrier": headline_barrier(r), "barrier_mean": m.get("barrier_mean"),
            "accuracy_barrier": _accuracy_barrier(m, curve),
            "near_zero_fraction": m.get("near_zero_fraction"),
            "loss_at_half": mid, "endpoint_loss_a": (m.get("endpoint_loss") or [None, None])[0],
            "endpoint_loss_b": (m.get("endpoint_loss") or [None, None])[1], "seconds": m.get("seconds"),
            "source": r.source, "created": dt.datetime.fromtimestamp(r.created).strftime("%Y-%m-%d %H:%M:%S"),
        })
    return pd.DataFrame(rows, columns=["run", "id", "state", "kind", "method", "classes", "model_a", "model_b",
                                       "models", "barrier", "barrier_mean", "accuracy_barrier", "near_zero_fraction",
                                       "loss_at_half", "endpoint_loss_a", "endpoint_loss_b", "seconds", "source",
                                       "created"])


def latest_per_method(runs: list[Run]) -> list[Run]:
    """A readable first choice of runs to compare: on the pair (or triple) of the newest run, the newest run of
    each method (issue #109: Compare preselected all 22 runs of a history, and the chips filled the box)."""
    if not runs:
        return []
    pairs = [r for r in runs if len(r.all_models) == 2]  # a pair's runs first: a triple's are few and apart
    newest = max(pairs or runs, key=lambda r: r.created)
    picked: dict[tuple[str, str], Run] = {}
    for run in sorted(runs, key=lambda r: r.created, reverse=True):
        if run.all_models == newest.all_models:
            picked.setdefault((run.kind == "curve" and "curve" or "", run.method), run)
    return sorted(picked.values(), key=lambda r: r.created)


def curves_table(runs: list[Run]) -> pd.DataFrame:
    """Fitted-curve runs on their own: what the curve is, its pair, its barrier beside the straight lines'."""
    return pd.DataFrame([{"curve": curve_text(r), "pair": pair_label(r.all_models),
                          "curve barrier": r.metrics.get("barrier"),
                          "straight line barrier": r.metrics.get("line_barrier"),
                          "aligned line barrier": r.metrics.get("aligned_line_barrier"),
                          "id": r.id[-6:]} for r in runs])


def _accuracy_barrier(metrics: dict, curve: dict) -> float | None:
    """In percentage points; a run recorded before accuracy barriers were reported gets it from its curve."""
    if "accuracy_barrier" in metrics:
        return metrics["accuracy_barrier"]
    if curve.get("accuracy"):
        from symalign.landscape.interpolation import accuracy_barriers

        return accuracy_barriers(curve["lambdas"], curve["accuracy"])[0]
    return None
