"""The dashboard's frame, for every page: the pages table for st.page_link, leaving
streamlit's legacy multipage mode, and the page for a URL that names none. Data access is
the door's (data.py), the other widgets are their own modules'.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

from pages.logic import links
from pages.logic.plain import plain

APP_PATH = Path(__file__).resolve().parents[2] / "app.py"
PAGES = {name: spec.file for name, spec in links.PAGES.items()}  # for st.page_link
ROOT = Path(__file__).resolve().parents[2]


def has_page(name: str) -> bool:
    """Is the page's file here? A trimmed install may leave one out: link it only then."""
    return (ROOT / PAGES[name]).is_file()


def ensure_frame() -> None:
    """Call first in every page script. With a pages/ folder beside app.py, streamlit's
    legacy multipage mode runs a page file on its own (without app.py: no sidebar, no
    seeding) when the very first request a server gets is a share link such as /run?run=3.
    Calling st.navigation switches that mode off for the process; until the frame has
    done so, leave the mode now and rerun through app.py (same URL, same page)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False  # exactly what st.navigation does
        # Run the frame inside this same script run rather than st.rerun(): a rerun would
        # drop this run's widget events (a click would be lost). app.py calls
        # st.navigation and runs this page again, now in the frame; then stop here.
        runpy.run_path(str(APP_PATH), run_name="__main__")
        st.stop()


def asked_page() -> str | None:
    """The URL path the browser asked for, when it names no page (/nosuchpage); None
    otherwise. Streamlit would quietly run the default page under that URL."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    manager = getattr(ctx, "pages_manager", None)
    if manager is None or manager.intended_page_script_hash:
        return None
    return links.unknown_page(manager.intended_page_name)


def no_such_page(name: str) -> None:
    """A clear message and a link to every listed page, in place of the default page."""
    st.title("No such page")
    st.error(f"There is no page /{plain(name[:80])} in this dashboard. Pick one of these:")
    for key, spec in links.PAGES.items():
        if spec.listed and has_page(key):
            st.page_link(PAGES[key], label=spec.title, icon=spec.icon)

