"""Jobs: work running in the background (align, barrier, three models), live, with cancel."""

import streamlit as st

from symalign.ui.jobs import jobs_board
from symalign.ui.widgets import user_errors

st.title("Jobs")
st.caption("Runs handed to a worker process: they go on when you leave a page or close the tab, "
           "and queued ones survive an app restart. Results land in the Run history.")
with user_errors():
    jobs_board()
