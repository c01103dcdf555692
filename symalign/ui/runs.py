"""Run selection shared by the Interpolation, Compare and Run history pages."""

from __future__ import annotations

import statistics

import streamlit as st

from symalign.plots.names import pair_label
from symalign.runs.store import Run
from symalign.runs.table import run_label
from symalign.ui.figures import show_figure
from symalign.ui.state import run_store
from symalign.ui.widgets import every_metric_table


def run_filters(key: str) -> list[Run]:
    """Filter widgets (model, method, state) over the whole history; newest first."""
    from symalign.ui.permalink import initial

    runs = run_store().list()
    c1, c2, c3, c4 = st.columns(4)
    model = c1.text_input("model contains", initial(f"{key}-model", "model", ""), key=f"{key}-model")
    methods = ["any"] + sorted({r.method for r in runs})
    states = ["any", "done", "running", "failed", "interrupted"]
    method = c2.selectbox("method", methods, key=f"{key}-method",
                          index=_index(methods, initial(f"{key}-method", "method")))
    state = c3.selectbox("state", states, key=f"{key}-state", index=_index(states, initial(f"{key}-state", "state")))
    tags = ["any"] + sorted({t for r in runs for t in r.tags})
    tag = c4.selectbox("tag", tags, key=f"{key}-tag", index=_index(tags, initial(f"{key}-tag", "tag")),
                       help="tags are set under a run's name in Run history, or with `symalign runs tag`")
    st.session_state[f"{key}-filters"] = {"model": model, "method": method, "state": state, "tag": tag}  # the link
    return [r for r in runs
            if (not model or any(model in m for m in r.all_models))
            and (method == "any" or r.method == method) and (state == "any" or r.state == state)
            and (tag == "any" or tag in r.tags)]


def _index(choices: list[str], value: str | None) -> int:
    return choices.index(value) if value in choices else 0


def pick_runs_with_curves(runs: list[Run], key: str, default: int = 3) -> list[Run]:
    with_curves = [r for r in runs if r.state == "done" and r.curve and r.kind != "curve"]
    fitted = sum(r.kind == "curve" and r.state == "done" for r in runs)
    if fitted:  # a fitted curve is not a straight line: it has its own page (issue #70)
        st.caption(f"{fitted} fitted-curve run{'s' if fitted > 1 else ''} (Bézier or polygonal chain) are on "
                   "the \"Beyond the straight line\" page, not among these straight lines.")
    if not with_curves:
        st.info("No finished runs with an interpolation curve yet: run the guided demo on Home, align two "
                "models on Align, or run `symalign barrier A B` / `symalign align ... --barrier`.")
        return []
    labels = {r.id: run_label(r) for r in with_curves}  # the label names the models
    from symalign.ui.permalink import initial_list

    linked = initial_list(key, "runs", list(labels))
    chosen = st.multiselect("runs", list(labels), default=linked if linked else list(labels)[:default], key=key,
                            format_func=labels.get)
    return [r for r in with_curves if r.id in chosen]


def show_universe(run: Run) -> None:
    """An align-many run: pairwise barriers of the aligned models and their curves."""
    from symalign.plots import curves_figure

    models = run.all_models
    st.subheader(f"Universe alignment of {len(models)} models ({run.method})")
    pairs = run.metrics.get("pairwise", [])
    cols = st.columns(max(len(pairs), 1))
    for col, p in zip(cols, pairs):
        i, j = p["pair"]
        col.metric(f"barrier {'ABCDEFGH'[i]} ↔ {'ABCDEFGH'[j]}", f"{p['barrier']:.4f}")
    if pairs:
        show_figure(curves_figure([(f"{'ABCDEFGH'[p['pair'][0]]} ↔ {'ABCDEFGH'[p['pair'][1]]}", p["curve"])
                                       for p in pairs]), key=f"universe-fig-{run.id}")
    gaps = run.metrics.get("function_gap", [])
    st.caption(f"Saved as run {run.id} in `{run.artifacts}` (one folder per model, each the same function as "
               f"its original: max |Δlogit| {max(gaps or [0]):.1e}). "
               "The Simplex page shows the loss between all three; "
               "Orthogonal corrections shows what learning changed.")


def simplex_runs(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.kind == "simplex" and r.state == "done"]


def show_simplex(runs: list[Run], key: str) -> None:
    """Ternary figures of simplex runs side by side on one colour scale, with their summaries."""
    import pandas as pd

    from symalign.plots import simplex_figures

    if not runs:
        return
    from symalign.match.matchers import method_names

    order = method_names()  # the registry's order: none, weight, ..., learned
    runs = sorted(runs, key=lambda r: (order.index(r.method) if r.method in order else len(order), r.created))
    fig = simplex_figures([(f"{r.method} [{r.id[-6:]}]", r.metrics) for r in runs])
    show_figure(fig, key=key)
    st.caption("Corners: " + " · ".join(f"**{'ABC'[i]}** = `{m}`" for i, m in enumerate(runs[0].all_models[:3]))
               + ". White dots: grid points in the near-zero region (loss ≤ corner plane + ε); dashed line: its edge.")
    from symalign.ui.explain import simplex_sentence

    sentence = simplex_sentence(runs)  # it compares only runs measured alike, and names them
    if sentence:
        st.markdown(sentence)
    table = pd.DataFrame([{"run": r.id[-6:], "method": r.method, "models": pair_label(r.all_models),
                           "max loss": r.metrics["max_loss"], "max barrier": r.metrics["max_barrier"],
                           "near-zero region": r.metrics["near_zero_fraction"], "ε": r.metrics["epsilon"],
                           "resolution": r.metrics["resolution"]} for r in runs])
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "max barrier": st.column_config.NumberColumn(help="above the plane through the corner losses"),
        "near-zero region": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)})


def show_spectrum(result: dict, key: str) -> None:
    """Histograms, summaries per kind and layer, permutation stability, and what it means."""
    import pandas as pd

    from symalign.plots import spectrum_figure
    from symalign.ui.explain import spectrum_sentence

    st.markdown(spectrum_sentence(result))
    show_figure(spectrum_figure(result), key=key)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**per component**")
        rows = [{"component": c["space"] + (f" (model {c['model']})" if "model" in c else ""), "kind": c["kind"],
                 "layer": "—" if c["layer"] is None else str(c["layer"]), "median θ": statistics.median(c["angles"]),
                 "max θ": max(c["angles"])}
                for c in result["components"]]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    with c2:
        st.markdown("**permutation stability** (share left where weight matching put it)")
        stab = pd.DataFrame([{"permutation": k, "unchanged": v} for k, v in result["permutation_stability"].items()])
        if stab.empty:
            st.caption("no permutation was learned")
        else:
            st.dataframe(stab, hide_index=True, width="stretch",
                         column_config={"unchanged": st.column_config.ProgressColumn(format="percent", min_value=0,
                                                                                     max_value=1)})


def barrier_colour(value: float, top: float, bottom: float = 0.0) -> str:
    """Green at the table's smallest barrier, red at its largest (CSS for a pandas Styler cell): the
    scale spans the values shown, so 0.99 and 4.90 never share a colour (issue #56)."""
    if value != value:  # NaN: a failed cell
        return ""
    t = min(max((value - bottom) / max(top - bottom, 1e-12), 0.0), 1.0)
    return f"background-color: rgba({int(60 + 180 * t)}, {int(170 - 110 * t)}, 90, 0.35)"


def _show_widths(cells, run: Run) -> bool:
    """A sweep over a width family: the barrier and the share closed against width (issue #44)."""
    from symalign.plots.interpolation import width_figure
    from symalign.sweeps.widths import width_claim, width_table

    table = width_table(cells) if not cells.empty else None
    if table is None or table.empty:
        return False
    methods = dict(zip(cells["row"], cells["method"]))
    st.markdown("**The barrier against width.** Each point is the seed pair at one width; the right panel is the "
                "share of that width's vanilla barrier each alignment removes. The literature finds that linear "
                "mode connectivity after alignment emerges as models widen: the share should rise with width.")
    show_figure(width_figure(table.to_dict(orient="records"), methods, f"{run.label}: the barrier against width"),
                key=f"sweep-widths-{run.id}")
    st.caption(width_claim(table))
    return True


def show_width_sweeps() -> None:
    """The newest finished sweep over each width family in the history, or how to run one."""
    import pandas as pd

    shown = set()
    for run in run_store().list(kind="sweep", state="done"):
        cells = pd.DataFrame(run.metrics.get("cells", []))
        family = run.label.removeprefix("width ") if run.label.startswith("width ") else run.label
        if family not in shown and _show_widths(cells, run):
            shown.add(family)
    if not shown:
        st.info("No sweep over widths yet. Run the grid `width` on Ablations (vit-digits: about 4 minutes on 2 CPU "
                "cores), or `symalign sweep --preset width --family vit-digits` (or gpt-shakespeare) in a shell.")


def show_sweep(run: Run) -> None:
    """A sweep run: the ablation table (rows × pairs, mean ± std) and every cell with its run."""
    import pandas as pd

    m = run.metrics
    st.subheader(f"Sweep: {len(m.get('cells', []))} cells ({m.get('executed', 0)} executed, "
                 f"{m.get('reused', 0)} reused from the history)")
    summary = pd.DataFrame(m.get("summary", []))
    if not summary.empty and "all classes" in summary["row"].tolist():  # the per-component ablation
        base = float(summary.loc[summary["row"] == "all classes", "mean"].iloc[0])
        summary["rise over all classes"] = summary["mean"] - base
    if not summary.empty:
        from symalign.sweeps.matrix import readable_matrix

        table = readable_matrix(summary, run.settings.get("rows"))
        notes = table.pop("note") if "note" in table else []  # sentences: below the table, not cut in a cell
        pairs = [c for c in table.columns if "↔" in c]
        values = table[pairs].astype(float) if pairs else None
        styled = table.style
        if values is not None and values.notna().any().any():
            top, bottom = float(values.max().max()), float(values.min().min())
            styled = styled.format("{:.3f}", subset=pairs, na_rep="–").map(
                lambda v: barrier_colour(v, top, bottom), subset=pairs)
        st.dataframe(styled, hide_index=True, width="stretch",
                     column_config={"row": st.column_config.TextColumn(pinned=True)})
        for row, note in zip(table["row"], notes):
            if note:
                st.markdown(f"**{row}**: {note}")
        st.caption("Barrier: the loss above the straight line between the endpoint losses (max over λ), mean ± std "
                   "over the seed pairs; one column per pair, coloured on one scale (green low). Accuracy barrier: "
                   "percentage points below the line between the endpoints' accuracies.")
        if "std" in summary:
            from symalign.plots.ablation import ablation_figure

            show_figure(ablation_figure(summary, f"{run.label or 'sweep'}: mean ± std over the seed pairs"),
                            key=f"sweep-chart-{run.id}")
    cells = pd.DataFrame(m.get("cells", []))
    _show_widths(cells, run)
    if not cells.empty:
        from symalign.sweeps.matrix import DEFINITIONS, readable_cells

        st.markdown("**Every cell** (each is a run in the history)")
        every_metric_table(f"cells-{run.id}").dataframe(readable_cells(cells), hide_index=True, width="stretch")
        st.caption(DEFINITIONS)
        st.download_button("download cells (CSV)", cells.to_csv(index=False), file_name=f"sweep-{run.id}.csv",
                           key=f"sweep-csv-{run.id}")
    if m.get("failed"):
        st.warning(f"{m['failed']} cell(s) failed; their runs carry the error.")
