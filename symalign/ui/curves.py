"""The "Beyond the straight line" page's views: a pair's curve runs, their paths on one chart, and the
plane they lie in. The science is in symalign.landscape.curve / plane; this only picks and draws."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from symalign.plots.plane import paths_figure, plane_figure
from symalign.runs.store import Run, RunStore
from symalign.ui.figures import show_figure


def curve_runs_of(store: RunStore, a: str, b: str, last: list[str] | None = None) -> list[Run]:
    """The pair's curve runs to show: the ones just computed, else the newest unaligned and the newest
    aligned one (whose folders are still there)."""
    done = [r for r in store.list(kind="curve") if r.state == "done" and r.model_a == a and r.model_b == b
            and Path(r.metrics.get("out", "")).is_dir()]
    if last:
        chosen = [r for r in done if r.id in last]
        if chosen:
            return sorted(chosen, key=lambda r: r.method != "none")
    newest_plain = next((r for r in done if r.method == "none"), None)
    newest_aligned = next((r for r in done if r.method != "none"), None)
    return [r for r in (newest_plain, newest_aligned) if r is not None]


def paths_of(runs: list[Run]) -> list[tuple[str, dict]]:
    """(label, path JSON) for the straight line, the aligned straight line and each curve."""
    out: list[tuple[str, dict]] = []
    plain = next((r for r in runs if r.method == "none"), None)
    aligned = next((r for r in runs if r.method != "none"), None)
    out.append(("straight line", (plain or aligned).metrics["line"]))
    if aligned is not None:
        out.append((f"aligned straight line ({aligned.method})", aligned.metrics["aligned_line"]))
    if plain is not None:
        out.append((f"{plain.metrics['bend']} curve", plain.metrics["curve"]))
    if aligned is not None:
        out.append((f"{aligned.metrics['bend']} curve after alignment", aligned.metrics["curve"]))
    return out


def students_text(runs: list[Run]) -> str:
    """Two sentences for students, decided from this pair's numbers (a weak alignment is not called
    linear mode connectivity)."""
    plain = next((r for r in runs if r.method == "none"), None)
    aligned = next((r for r in runs if r.method != "none"), None)
    line = (plain or aligned).metrics["line_barrier"]
    text = (f"**For students.** The grey line is the straight path between the two trained models: its hump "
            f"({line:.2f} nats above the ends) is the barrier.")
    if plain is not None:
        text += (f" The fitted curve goes around it with no symmetry at all (its barrier: "
                 f"{plain.metrics['barrier']:.2f}), as Garipov et al. found.")
    if aligned is not None:
        after = aligned.metrics["aligned_line_barrier"]
        text += (f" After {aligned.method} matching the straight line itself stays low ({after:.2f}): that is "
                 "linear mode connectivity." if after <= 0.25 * line else
                 f" {aligned.method.capitalize()} matching lowers the straight line's barrier to {after:.2f} but "
                 "does not remove it: a stronger alignment (learned matching) is needed for the straight line alone.")
    return text


def show_paths(paths: list[tuple[str, dict]], key: str) -> None:
    show_figure(paths_figure(paths, "loss along each path"), key=key)
    table = pd.DataFrame([{"path": label, "loss barrier": c["barrier"], "accuracy barrier (pp)": c["accuracy_barrier"]}
                          for label, c in paths])
    st.dataframe(table, hide_index=True, column_config={
        "loss barrier": st.column_config.NumberColumn(format="%.3f"),
        "accuracy barrier (pp)": st.column_config.NumberColumn(format="%.1f")})


def plane_settings(runs: list[Run], third: str, resolution: int, max_examples: int | None = 256):
    """The plane through A, B and aligned B (Zhang et al.'s Fig. 2) or the curve's bend (Garipov et al.'s
    Fig. 1), with the straight lines and the curves drawn on it: as a `plane` run's settings."""
    from symalign.runs.settings import PlaneSettings

    plain = next((r for r in runs if r.method == "none"), None)
    aligned = next((r for r in runs if r.method != "none"), None)
    base = Path((plain or aligned).metrics["out"])
    if third == "aligned B" and aligned is not None:
        models = [str(base / "a"), str(base / "b"), str(Path(aligned.metrics["out"]) / "b")]
        curves = [str(Path(r.metrics["out"])) for r in (plain, aligned) if r is not None]
    else:
        folder = Path((plain or aligned).metrics["out"])
        models, curves = [str(folder / "a"), str(folder / "b"), str(folder / "bend")], [str(folder)]
    labels = ["A", "B", "aligned B" if third == "aligned B" and aligned else "bend"]
    return PlaneSettings(models, curves, labels, int(resolution), max_examples, labels[2] != "bend")


def plane_of(settings, key: str) -> bool:
    """Draw the plane recorded with these settings; False when the history has none yet."""
    from symalign.ui.state import run_store
    from symalign.workflows.curves import find_plane

    run = find_plane(run_store(), settings)
    if run is None:
        return False
    plane = run.metrics
    show_figure(plane_figure(plane, f"loss over the plane through A, B and {list(plane['points'])[2]}"), key=key)
    if plane.get("curve_off_plane", 0) > 1e-3:
        st.caption(f"Curves not in this plane are drawn as their projection onto it (at most "
                   f"{plane['curve_off_plane']:.2f} away in parameter norm).")
    return True
