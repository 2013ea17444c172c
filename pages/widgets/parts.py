"""The parts every page repeats: a part drawn or said broken in its own place, charts
stretched to their column, the share link, noise badges, the published-run banner and the
run delete button. URL parameters are url.py's, the step timeline timeline_view.py's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import streamlit as st

from contract.run_summary import RunHeader
from pages.logic import points_table
from pages.logic.plain import MAX_SHOWN, plain
from pages.logic.run_text import PUBLISHED_NOTE
from pages.widgets import data


@contextlib.contextmanager
def drawn(what: str):
    """Draw one part of a page; if this run's data breaks it, say so in its own place and
    let the rest of the page (and every other run) carry on. st.stop() and reruns are
    BaseExceptions and pass through."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - any stored run must leave the page standing
        first = (str(e).strip().splitlines() or [""])[0][:200]
        st.error(f"{what} cannot be drawn for this run ({type(e).__name__}"
                 + (f": {plain(first)}" if first else "") + ")", icon=":material/broken_image:")


def delete_run_button(run_id: int) -> None:
    """Writable deployments only: delete this run (its points and sections) after a
    confirmation. The write itself refuses read-only mode too (db.store.delete_run)."""
    if data.read_only():
        return
    with st.popover("Delete this run", icon=":material/delete:"):
        st.caption("Removes the run, its points and its serve data from this database. "
                   "Export its bundle first to keep a copy.")
        if st.button(f"Delete run {run_id}", key="delete_run", type="primary"):
            try:
                deleted = data.delete_run(run_id)
            except data.WRITE_ERRORS as e:
                st.error(plain(str(e).strip().splitlines()[0]))
                return
            st.success(f"Deleted run {run_id} ({deleted} points).")


def chart(chart, key: str) -> None:
    """An Altair chart, or its Vega-Lite spec (spec() below), stretched to its container
    (pages.charts builds single or layered charts only, so every one can stretch)."""
    if isinstance(chart, dict):
        st.vega_lite_chart(spec=chart, key=key, width="stretch")
    else:
        st.altair_chart(chart, key=key, width="stretch")


def spec(build: Callable[..., Any], *args: Any) -> Any:
    """build(*args)'s chart as its Vega-Lite spec (None for no chart; a builder's dict of
    charts as a dict of specs), built once per builder and arguments (frames are hashed
    by content): Altair checks a whole spec against the schema each time a page draws it,
    most of a chart page's script run (0.25 s of Trends' 0.4 s; bench/page_speed.py),
    and every chart after it waited. A builder is a module-level function of
    pages/charts, named in the key as data.cached names a query."""
    return _spec(f"{build.__module__}.{build.__qualname__}", build, *args)


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=64)
def _spec(name: str, _build: Callable[..., Any], *args: Any) -> Any:
    figure = _build(*args)
    if isinstance(figure, dict):
        return {k: c.to_dict() for k, c in figure.items()}
    return None if figure is None else figure.to_dict()


def text_table(frame) -> None:
    """A short table of sentences (each run's key figure and memory cost, as its summary
    words them): a static table whose cells wrap, every word shown. A grid cuts a cell at
    its column's edge, and these sentences did not fit 1280 px side by side (issue 46).
    Its cells are Markdown, so each is plain(); a missing one is a dash. A long one (a
    series of a hundred runs) stays a grid in its scroll box, not pages of rows."""
    if len(frame) > points_table.WHOLE_ROWS:
        st.dataframe(frame, hide_index=True, placeholder="\u2014")
        return
    shown = frame.map(lambda v: "\u2014" if v is None or v != v or v == "" else plain(v))
    st.table(shown, hide_index=True)


SHARE_LINK = "Share link: this URL shows the same view in any browser"


def share_link(url: str) -> None:
    """A copyable link (st.code has a copy button). One holding a parameter set of
    100,000 characters is not drawn whole (the browser took seconds to lay it out, and
    no server takes such a URL): the address bar holds it."""
    if len(url) > MAX_SHOWN:
        st.caption(f"Share link: this view's URL is {len(url):,} characters long (a "
                   "parameter holds most of it), too long to show or to share; the "
                   "address bar holds it.")
        return
    # Drawn only while its expander is open: st.code's syntax highlighter is a 1.5 MB
    # script that the browser loads and parses whenever an st.code is on the page, open
    # or not, beside the page's charts (bench/results/page_speed.txt); the copy button is
    # why st.code.
    with st.expander(SHARE_LINK, key="share_link", on_change="rerun") as shown:
        if shown.open:
            st.code(url, language=None, wrap_lines=True)  # whole in a half-page column


# One colour and icon per noise level (noise.NOISE_LEVELS), for run and point badges.
NOISE_BADGES = {"ok": ("green", ":material/check_circle:"),
                "noisy": ("orange", ":material/graphic_eq:"),
                "host unstable": ("red", ":material/warning:"),
                "no interval": ("gray", ":material/remove:")}


def noise_badge(level: str, text: str) -> str:
    """The run's noise badge as Markdown, to sit on one line with other figures."""
    color, icon = NOISE_BADGES.get(level, NOISE_BADGES["no interval"])
    return f":{color}-badge[{icon} Noise: {plain(text)}]"


def published_banner(header: RunHeader) -> None:
    if header.source == "published":
        st.info(f"{PUBLISHED_NOTE} Source: {plain(header.label or 'unknown')}",
                icon=":material/article:")
