"""Permalinks: a page's state in its URL, so a result can be shared and opened again as it was
(issue #43). The page reads its starting state from the query string, writes it back as it
changes (the address bar is always the link), and shows the link with a copy button."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import streamlit as st


def initial(key: str, param: str, default=None):
    """A widget's starting value from the URL's `param` the first time the page runs in a session."""
    if key not in st.session_state and param in st.query_params:
        return st.query_params[param]
    return default


def initial_list(key: str, param: str, choices: list[str]) -> list[str] | None:
    """A multiselect's starting values from a comma-separated `param` (those still among `choices`)."""
    if key in st.session_state or param not in st.query_params:
        return None
    wanted = [v for v in st.query_params[param].split(",") if v]
    return [v for v in wanted if v in choices]


def with_view(params: dict[str, str]) -> dict[str, str]:
    """`params` and, in projector view, `view=projector`: a link opens in the view it was copied in."""
    from symalign.ui.figures import VIEW_PARAM, projector_on

    return {**params, VIEW_PARAM: "projector"} if projector_on() else dict(params)


def permalink(page: str, params: dict[str, str]) -> str:
    """The address that opens `page` with `params` on this server (as the browser reached it)."""
    params = with_view(params)
    parts = urlsplit(st.context.url or "http://localhost:8501")
    query = urlencode({k: v for k, v in params.items() if v not in (None, "", "any")})
    return f"{parts.scheme}://{parts.netloc}/{page}" + (f"?{query}" if query else "")


def show_permalink(page: str, params: dict[str, str]) -> None:
    """Put the state in the address bar and show the link with a copy button (st.code has one)."""
    kept = {k: v for k, v in with_view(params).items() if v not in (None, "", "any")}
    if dict(st.query_params) != kept:
        st.query_params.from_dict(kept)
    st.caption("Link to this view (copy it with the button on the right):")
    st.code(permalink(page, params), language=None)


def linked_runs(param: str, kind: str | None = None) -> list[str] | None:
    """The run ids a link names in `param` (comma-separated) when the history holds every one of them (of
    `kind`); None, with one warning naming the missing ones, when it does not; None without a word when the
    link names none. How Align and Merge open a shared result (issue #56)."""
    from symalign.ui.state import run_store

    linked = [i for i in st.query_params.get(param, "").split(",") if i]
    if not linked:
        return None
    known = {r.id for r in run_store().list(kind=kind)}
    missing = [i for i in linked if i not in known]
    if missing:
        st.warning(f"No run `{', '.join(missing)}` in this history (deleted, or from another machine): nothing to "
                   "show from the link.")
        return None
    return linked
