"""Every figure of the app goes through `show_figure`: the projector view (sidebar toggle) restyles
it for a room, the camera button saves it in the chosen format, and a download gives it as one HTML
file that opens anywhere (interactive, for a talk or a supplement)."""

from __future__ import annotations

import streamlit as st

PROJECTOR = "view-projector"
FORMAT = "view-export-format"


VIEW_PARAM = "view"  # ?view=projector: the projector view survives a reload and travels with every link
# Page text, not only figures: Streamlit sizes its text in rem, so the root font size scales all of it.
PROJECTOR_CSS = "<style>html { font-size: 22px; } [data-testid='stSidebar'] { font-size: 18px; }</style>"


def projector_on() -> bool:
    return bool(st.session_state.get(PROJECTOR))


def view_settings() -> None:
    """The sidebar's view settings: projector view (kept in the address, so a reload, a closed tab's
    reopening and every permalink keep it) and the export format (kept for the session)."""
    if PROJECTOR not in st.session_state and st.query_params.get(VIEW_PARAM) == "projector":
        st.session_state[PROJECTOR] = True  # a reload or a link: the address says projector
    st.toggle("projector view", key=PROJECTOR, help="page text and every figure enlarged (figures: fonts of at least "
                                                    "18 px, dark text, thicker lines): readable from the back of a "
                                                    "seminar room; kept in the page's address")
    if projector_on():
        st.query_params[VIEW_PARAM] = "projector"
        st.html(PROJECTOR_CSS)  # style only: Streamlit injects it into the page (st.markdown's did not apply)
    elif st.query_params.get(VIEW_PARAM) == "projector":
        del st.query_params[VIEW_PARAM]
    st.selectbox("figure export", ["png", "svg"], key=FORMAT,
                 help="what the camera button above a figure saves: png (twice the size) or svg (vector, for papers)")


def show_figure(fig, key: str) -> None:
    """Draw a figure as the view settings ask, with downloads under it: HTML (interactive), SVG and PDF
    (vector, for a paper; drawn by kaleido through an installed Chrome or Chromium, when clicked)."""
    from symalign.plots.presentation import export_config, projector
    from symalign.plots.static_files import figure_file, static_export_missing

    if projector_on():
        fig = projector(fig)
    st.plotly_chart(fig, key=key, config=export_config(st.session_state.get(FORMAT, "png"), f"symalign-{key}"))
    html, svg, pdf, _ = st.columns([2, 1, 1, 3])  # room for the label at the projector's 22 px text
    html.download_button("download as HTML", lambda: fig.to_html(include_plotlyjs=True),
                         file_name=f"symalign-{key}.html", mime="text/html", key=f"{key}-html", type="tertiary",
                         on_click="ignore", help="the figure as one self-contained, interactive HTML file")
    missing = static_export_missing()
    for column, fmt, mime in ((svg, "svg", "image/svg+xml"), (pdf, "pdf", "application/pdf")):
        column.download_button(fmt.upper(), lambda f=fmt: figure_file(fig, f),
                               file_name=f"symalign-{key}.{fmt}", mime=mime, key=f"{key}-{fmt}", type="tertiary",
                               on_click="ignore", disabled=missing is not None,
                               help=missing or f"the figure as a vector {fmt.upper()} file (made when clicked)")
