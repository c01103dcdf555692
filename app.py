"""symalign: the Streamlit app. Navigation only; each page is a thin client of the package.

Pages are grouped in sections by what the user does."""

import streamlit as st

from symalign.ui.widgets import resume_once, show_devices, sidebar

st.set_page_config(page_title="symalign", page_icon=":material/compare_arrows:", layout="wide")

pages = {
    "Start": [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/models.py", title="Models", icon=":material/inventory_2:"),
        st.Page("pages/symmetries.py", title="Symmetries", icon=":material/shuffle:"),
    ],
    "Align and measure": [
        st.Page("pages/align.py", title="Align", icon=":material/compare_arrows:"),
        st.Page("pages/interpolation.py", title="Interpolation", icon=":material/show_chart:"),
        st.Page("pages/compare.py", title="Compare matchers", icon=":material/balance:"),
        st.Page("pages/ablations.py", title="Ablations", icon=":material/grid_on:"),
        st.Page("pages/runs.py", title="Run history", icon=":material/history:"),
        st.Page("pages/jobs.py", title="Jobs", icon=":material/pending_actions:"),
    ],
    "Use the alignment": [
        st.Page("pages/merge.py", title="Merge & transport", icon=":material/merge:"),
    ],
    "Three models and corrections": [
        st.Page("pages/simplex.py", title="Simplex", icon=":material/change_history:"),
        st.Page("pages/spectra.py", title="Orthogonal corrections", icon=":material/rotate_right:"),
    ],
}
navigation = st.navigation(pages)
device_slot = sidebar()
try:
    navigation.run()
finally:  # after the page (also when it stops early): neither delays Home's first paint
    show_devices(device_slot)
    resume_once()
