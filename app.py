"""symalign: the Streamlit app. Navigation only; each page is a thin client of the package.

Pages are grouped in sections by what the user does."""

import streamlit as st

from symalign.ui.session import first_run_alone, passphrase_page, unlocked
from symalign.ui.widgets import resume_once, show_devices, sidebar

st.set_page_config(page_title="symalign", page_icon=":material/compare_arrows:", layout="wide")

if not unlocked():  # a shared app with a passphrase: nothing else renders (direct links land here too)
    st.navigation([st.Page(passphrase_page, title="symalign", default=True)], position="hidden").run()
    st.stop()

pages = {
    "Start": [
        st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("app_pages/models.py", title="Models", icon=":material/inventory_2:"),
        st.Page("app_pages/symmetries.py", title="Symmetries", icon=":material/shuffle:"),
    ],
    "Align and measure": [
        st.Page("app_pages/align.py", title="Align", icon=":material/compare_arrows:"),
        st.Page("app_pages/interpolation.py", title="Interpolation", icon=":material/show_chart:"),
        st.Page("app_pages/compare.py", title="Compare matchers", icon=":material/balance:"),
        st.Page("app_pages/ablations.py", title="Ablations", icon=":material/grid_on:"),
        st.Page("app_pages/runs.py", title="Run history", icon=":material/history:"),
        st.Page("app_pages/jobs.py", title="Jobs", icon=":material/pending_actions:"),
    ],
    "Use the alignment": [
        st.Page("app_pages/merge.py", title="Merge & transport", icon=":material/merge:"),
    ],
    "Three models and corrections": [
        st.Page("app_pages/simplex.py", title="Simplex", icon=":material/change_history:"),
        st.Page("app_pages/spectra.py", title="Orthogonal corrections", icon=":material/rotate_right:"),
        st.Page("app_pages/barrier_anatomy.py", title="Where the barrier lives", icon=":material/troubleshoot:",
                url_path="anatomy"),
        st.Page("app_pages/paths.py", title="Beyond the straight line", icon=":material/gesture:"),
    ],
}
navigation = st.navigation(pages, expanded=True)  # every page listed (13 would fold to 10 and "View 3 more")
device_slot = sidebar()
with first_run_alone(navigation.url_path):  # a page's first run imports the package: one thread at a time
    try:
        navigation.run()
    finally:  # after the page (also when it stops early): neither delays Home's first paint
        show_devices(device_slot)
        resume_once()
