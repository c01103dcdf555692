"""Ablations: a grid of alignments (methods × symmetry classes × seed pairs) in one click, as a matrix."""

import time

import streamlit as st

from symalign.data import learned_defaults
from symalign.match.matchers import matcher
from symalign.runs.durations import estimate_text, last_run, sweep_typical, took
from symalign.sweeps import PRESETS, preset_grid, run_sweep
from symalign.sweeps.grid import PRESET_HELP, Grid
from symalign.train.recipes import RECIPES
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.papers import papers_section
from symalign.ui.runs import show_sweep
from symalign.ui.session import heavy_work
from symalign.ui.state import cached_load, run_store
from symalign.ui.widgets import StreamlitProgress, user_errors
from symalign.zoo import manifest

st.title("Ablations")
st.markdown("The papers' tables first (each on zoo stand-ins, what differs said beside the paper's values), then any "
            "grid: "
            "run a whole grid — every pair of a family's three seeds × a preset's rows (a method and the symmetry "
            "classes it may use) — and read it as a matrix: one line per row, one column per seed pair, then "
            "mean ± std over the pairs. Every cell is an ordinary run in the history, so cells already computed "
            "(here, by `symalign sweep`, or by hand) are reused, not recomputed. The same grid from a shell: "
            "`symalign sweep --preset NAME --family RECIPE`.")

papers_section()
st.header("Grids")

seeds_of = [e["recipe"] for e in manifest()["models"]]
families = sorted({r for r in seeds_of if seeds_of.count(r) >= 3})  # a grid pairs three seeds (fine-tunes ship one)
with user_errors():
    if not families:
        st.info("The zoo is empty (build it with `symalign zoo build`).")
        st.stop()
    c1, c2, c3 = st.columns([1, 2, 1])
    family = c1.selectbox("zoo family", families, index=families.index("vit-digits") if "vit-digits" in families else 0,
                          key="ablations-family")
    presets = ["quick"] + [p for p in PRESETS if p != "quick"]  # the quick one first
    preset = c2.selectbox("grid", presets, key="ablations-preset")
    c2.caption(PRESET_HELP.get(preset, ""))  # beside the box, not in it: the box would cut it at 1280 px
    seeds = c3.multiselect("matcher seeds (learned rows)", [0, 1, 2], default=[0], key="ablations-seeds")
    with st.expander("evaluation options"):
        o1, o2 = st.columns(2)
        points = o1.slider("interpolation points per curve", 3, 41, 21, 2, key="ablations-points")
        max_examples = o2.number_input("evaluation examples (0 = all)", 0, 1_000_000, 0, key="ablations-examples")
    grid: Grid = preset_grid(preset, family, seeds=sorted(seeds) or [0])
    grid.points, grid.max_examples = int(points), int(max_examples) or None
    typical_seconds, typical_text = sweep_typical([c.row.method for c in grid.cells()], family,
                                                  learned_defaults(getattr(RECIPES.get(family), "data", None)
                                                                   or "")["steps"])
    st.caption(f"{len(grid.cells())} cells: {len(grid.rows)} rows × {len(grid.pairs)} pairs"
               + (f" (stochastic rows × {len(grid.seeds)} seeds)"
                  if any(matcher(r.method).stochastic for r in grid.rows) else "")
               + ". Time: " + estimate_text(took(last_run(run_store(), "sweep", settings={"name": grid.name})),
                                            typical_text, cached_load(), typical_seconds))
    background = st.checkbox("run in the background", True, key="ablations-background",
                             help="a job in a worker process: the grid goes on when you leave this page (see Jobs); "
                                  "off: it runs in this page (keep the tab open)")
    clicked = st.button("Run the grid", type="primary", key="ablations-go")
    if clicked and background:
        request = {"preset": preset, "family": family, "seeds": sorted(seeds) or [0], "points": grid.points,
                   "max_examples": grid.max_examples}
        st.session_state["ablations-last-job"] = submit_job("sweep", request, label=f"{preset} grid: {family}")
        st.session_state.pop("ablations-last", None)
    elif clicked:
        with heavy_work("the grid"):
            bar = StreamlitProgress("checking the grid…")
            result = run_sweep(grid, executor="serial", store=run_store(), source="app",
                               progress=lambda done, total, row: bar(row["row"], done, total))
            bar.done()
        st.session_state["ablations-last"] = [result.run_id]

resume_job(("sweep",), "ablations-last")  # this browser's job still under way, after a reload
if "ablations-last-job" in st.session_state:
    with user_errors():
        follow_job(st.session_state["ablations-last-job"], "ablations-last")

with user_errors():
    sweeps = [r for r in run_store().list(kind="sweep") if r.state == "done"]
    if not sweeps:
        st.info("No grids yet: pick a family and a grid and run it (vit-digits `quick` is the quickest).")
        st.stop()
    labels = {r.id: f"{r.label or r.method} · {r.metrics.get('executed', 0)} executed, "
                    f"{r.metrics.get('reused', 0)} reused [{r.id[-6:]}]" for r in sweeps}
    last = (st.session_state.get("ablations-last") or [None])[0]
    if last in labels and st.session_state.get("ablations-shown-for") != last:
        # a grid just ran: show it, whatever the picker held before (issue #109: an all-reused grid left the
        # earlier one on screen, the box keeping its old value)
        st.session_state["ablations-shown"] = st.session_state["ablations-shown-for"] = last
    if st.session_state.get("ablations-shown") not in labels:
        st.session_state["ablations-shown"] = next(iter(labels))  # the newest grid
    chosen = st.selectbox("grid to show", list(labels), format_func=labels.get, key="ablations-shown")
    shown = next(r for r in sweeps if r.id == chosen)
    if shown.id == last:
        cells, reused = len(shown.metrics.get("cells", [])), shown.metrics.get("reused", 0)
        st.success(f"The grid you ran: {shown.label or shown.method}, finished "
                   f"{time.strftime('%H:%M:%S', time.localtime(shown.finished or shown.created))}"
                   + (f"; {reused} of {cells} cells reused from earlier runs" if reused else
                      f"; all {cells} cells computed now") + ".")
    show_sweep(shown)
