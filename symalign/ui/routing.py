"""Every page opened by its own link renders inside app.py's navigation.

Why this exists: Streamlit decides once per server process whether the app is a "pages
directory" app (Multipage v1), from whether a `pages/` folder sits next to the entry script; it
switches to `st.navigation` (v2) only when app.py actually runs. So if the first visitor of a fresh
server opens /runs, Streamlit's v1 emulation runs pages/runs.py directly with a raw file list as
navigation, and app.py — with its sections, titles and sidebar — never runs. Each page therefore
starts with `route_through_app()`: run by the v1 emulation, it turns the emulation off for the
whole server and reruns the session, which now goes through app.py and lands on the same page
(same URL, same query parameters). Everywhere else (normal navigation, AppTest) it does nothing."""

from __future__ import annotations

import streamlit as st


def route_through_app() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
