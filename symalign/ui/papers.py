"""The Ablations page's "papers' tables": every table of the papers (symalign.papers) by paper and name,
its setting and printed values, a button that runs it on the zoo as a background job (it survives a
reload), and the zoo's numbers beside the paper's with each claim's verdict once it lands."""

from __future__ import annotations

import time

import streamlit as st

from symalign.papers import TABLES
from symalign.runs.durations import estimate_text, last_run, paper_typical, took
from symalign.sweeps.paper_tables import FAMILIES, coverage_markdown, latest_paper_run
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.state import cached_load, run_store
from symalign.ui.widgets import user_errors


def _select_resumed() -> None:
    """Open the picker on the table (and family) of the job or run this browser resumed."""
    from symalign.ui.jobs import job_queue

    request = None
    if "papers-last-job" in st.session_state:
        request = job_queue().get(st.session_state["papers-last-job"]).request
    elif st.session_state.get("papers-last"):
        request = run_store().get(st.session_state["papers-last"][0]).settings
    if request and request.get("table") in TABLES:
        st.session_state["papers-table"] = request["table"]
        st.session_state[f"papers-family-{request['table']}"] = request["family"]


def papers_section() -> None:
    st.header("The papers' tables")
    st.caption(f"{len(TABLES)} tables and figures of the papers, each run on zoo stand-ins (smaller models and other "
               "data: what differs is said under each): the paper's printed values and claims in its authors' "
               "words, then the same experiment on the zoo, its verdicts by one rule over the seed pairs: agrees "
               "(every pair, or the paired mean beyond 2 SE), contradicted (the same, the other way), else not "
               "separable, with the pairs that go the other way named. The command line: `symalign paper TABLE`.")
    with st.expander("Which of the papers' tables and figures are here, and which are not"):
        st.markdown(coverage_markdown())
    resume_job(("paper",), "papers-last")  # a reload or a reopened tab picks this browser's job up again ...
    if "papers-table" not in st.session_state:  # ... on the table it was running
        _select_resumed()
    with user_errors():
        key = st.selectbox("paper and table", list(TABLES), key="papers-table",
                           format_func=lambda k: f"{TABLES[k].paper} — {TABLES[k].name}")
        c2, c3 = st.columns(2)  # its own row: the longest paper and family names uncut at 1280 px
        table = TABLES[key]
        family = c2.selectbox("zoo family", FAMILIES[key], key=f"papers-family-{key}")
        examples = int(c3.number_input("evaluation examples (0 = all)", 0, 1_000_000, 0, step=64,
                                       key="papers-examples",
                                       help="fewer: a quicker, noisier first look (the run records how many)"))
        st.markdown(f"**The paper's setting.** {table.setting}")
        if table.rows:
            st.markdown(table.markdown().split("\n\n", 1)[1])  # the printed values (the setting is above)
        for claim in table.claims:
            st.markdown(f"- “{claim.quote}” — decided on the zoo by: {claim.decided_by}")
        for note in table.notes:
            st.caption(note)
        st.caption(f"On the zoo: {table.zoo}")
        same = last_run(run_store(), "paper", settings={"table": key, "family": family,
                                                        "max_examples": examples or None})
        typical_seconds, typical = paper_typical(key, family)
        st.caption("Time: " + estimate_text(took(same), typical, cached_load(), typical_seconds) + ".")
        if st.button("Run it on the zoo", key="papers-run", type="primary"):
            request = {"table": key, "family": family, "max_examples": examples or None}
            st.session_state["papers-last-job"] = submit_job("paper", request,
                                                             label=f"{table.paper}, {table.name}: {family}")
            st.session_state.pop("papers-last", None)
    if "papers-last-job" in st.session_state:
        with user_errors():
            follow_job(st.session_state["papers-last-job"], "papers-last")
    with user_errors():
        run = latest_paper_run(run_store(), key, family)
        if run is None and "papers-last-job" in st.session_state:
            return  # under way: its bar above says so
        if run is None:
            st.info(f"{table.name} has not been run on {family} here yet: click **Run it on the zoo** (a background "
                    "job; it goes on if you reload or close the tab).")
            return
        spent = f", took {run.finished - run.created:.0f} s" if run.finished else ""
        examples = run.settings.get("max_examples")
        st.markdown(f"**On the zoo: {family}** (run {run.id[-6:]}, "
                    f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(run.created))}{spent}; "
                    f"{f'{examples} evaluation examples' if examples else 'every evaluation example'})")
        st.markdown(run.metrics["text"])
