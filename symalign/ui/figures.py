"""Every figure of the app goes through `show_figure`: the projector view (sidebar toggle) restyles
it for a room, the camera button saves it in the chosen format, and a download gives it as one HTML
file that opens anywhere (interactive, for a talk or a supplement)."""

from __future__ import annotations

import streamlit as st

PROJECTOR = "view-projector"
FORMAT = "view-export-format"


def view_settings() -> None:
    """The sidebar's view settings: projector view and the export format (kept for the session)."""
    st.toggle("projector view", key=PROJECTOR, help="fonts of at least 18 px, dark text and thicker lines on every "
                                                    "figure: readable from the back of a seminar room")
    st.selectbox("figure export", ["png", "svg"], key=FORMAT,
                 help="what the camera button above a figure saves: png (twice the size) or svg (vector, for papers)")


def show_figure(fig, key: str) -> None:
    """Draw a figure as the view settings ask, with an HTML download under it."""
    from symalign.plots.presentation import export_config, projector

    if st.session_state.get(PROJECTOR):
        fig = projector(fig)
    st.plotly_chart(fig, key=key, config=export_config(st.session_state.get(FORMAT, "png"), f"symalign-{key}"))
    st.download_button("download as HTML", lambda: fig.to_html(include_plotlyjs=True), file_name=f"symalign-{key}.html",
                       mime="text/html", key=f"{key}-html", type="tertiary", on_click="ignore",
                       help="the figure as one self-contained, interactive HTML file (made when clicked)")
