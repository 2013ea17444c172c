"""The page's state in its URL: run ids, multiselect filters and the open view, each read
with one clear line for a bad value, so a shared link shows the same view. The values'
checks are pages/logic/links.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import streamlit as st

from pages.logic import links
from pages.logic.plain import cut, plain
from pages.widgets.frame import PAGES

if TYPE_CHECKING:  # st.tabs' tab (with `.open`), named by streamlit only in this module
    from streamlit.elements.lib.mutable_tab_container import TabContainer


def run_id_from_url(param: str = "run") -> int:
    """The single run id of ?run=ID; on a bad or missing value show one clear line and
    stop the page (nothing below runs)."""
    values = st.query_params.get_all(param)
    try:
        if len(values) > 1:
            raise links.LinkError(f"?{param}= is given {len(values)} times: a run page shows "
                                  "one run (use Compare for several)")
        return links.parse_run_id(values[0] if values else None, param)
    except links.LinkError as e:
        st.error(plain(e))
        st.page_link(PAGES["runs"], label="Pick a run on the Runs page", icon=":material/list:")
        st.stop()


def run_ids_from_url(param: str = "run") -> list[int]:
    """All run ids of ?run=1&run=2 (or ?run=1,2); each bad value gets a warning line and
    the good ones are kept."""
    ids, errors = links.parse_run_ids(st.query_params.get_all(param), param)
    for e in errors:
        st.warning(plain(e))
    return ids


def set_run_ids(ids: Sequence[int], param: str = "run") -> None:
    st.query_params[param] = [str(i) for i in ids]


def app_url() -> str | None:
    """The app's URL as the user's browser sees it (None in tests)."""
    try:
        return st.context.url
    except Exception:  # noqa: BLE001 - no browser context (AppTest, bare mode)
        return None


def multiselect_param(container, label: str, param: str, options: list[str]) -> list[str]:
    """A multiselect mirrored in the URL (?param=a&param=b): a shared link restores it."""
    key, synced = f"_ms_{param}", f"_ms_{param}_url"
    asked = st.query_params.get_all(param)
    if key not in st.session_state or st.session_state.get(synced) != asked:
        unknown = [v for v in asked if v not in options]
        if unknown:
            st.warning(plain(f"?{param}={unknown[0]!r} matches no run; that filter is ignored"))
        st.session_state[key] = [v for v in asked if v in options]
    else:
        st.session_state[key] = [v for v in st.session_state[key] if v in options]
    chosen = container.multiselect(label, options, key=key)
    st.query_params[param] = chosen
    st.session_state[synced] = list(chosen)
    return chosen


def toggle_param(container, label: str, param: str, key: str) -> bool:
    """A toggle mirrored in the URL (?param=1 on, left out off): a shared link restores
    it. A bad value gets one line naming it, and the toggle starts off."""
    synced = f"{key}_url"
    asked = st.query_params.get_all(param)
    if key not in st.session_state or st.session_state.get(synced) != asked:
        try:
            st.session_state[key] = links.parse_flag(asked, param)
        except links.LinkError as e:
            st.warning(plain(e))
            st.session_state[key] = False
    on = container.toggle(label, key=key)
    if on:
        st.query_params[param] = "1"
    else:
        st.query_params.pop(param, None)
    st.session_state[synced] = st.query_params.get_all(param)
    return on


def value_text(value: object) -> str:
    """A choice as its URL parameter holds it: 10.0 as '10', an id as '7'."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def choice_param(container, widget: str, label: str, param: str, options: Sequence,
                 key: str, index: int = 0, **kw):
    """A selectbox or radio (`widget`) mirrored in the URL (?param=value): a shared link
    restores the choice. A value that is none of the options gets one error line naming
    it and the options, and the default (`index`) is shown."""
    texts = [value_text(o) for o in options]
    synced = f"{key}_url"
    asked = st.query_params.get_all(param)
    if key not in st.session_state or st.session_state.get(synced) != asked:
        if asked and asked[-1] in texts:
            st.session_state[key] = options[texts.index(asked[-1])]
        else:
            if asked:
                st.error(plain(f"?{param}={cut(asked[-1], 40)!r} is not one of "
                               f"{', '.join(texts)}; showing {texts[index]}."),
                         icon=":material/error:")
            st.session_state[key] = options[index]
    elif st.session_state[key] not in options:  # e.g. a mode the new batch size lacks
        st.session_state[key] = options[index]
    value = getattr(container, widget)(label, options, key=key, **kw)
    st.query_params[param] = value_text(value)
    st.session_state[synced] = st.query_params.get_all(param)
    return value


VIEW_KEY = links.VIEW_PARAM  # the tabs' key is the URL parameter's name


def view_tabs(labels: Sequence[str], default: str) -> Sequence[TabContainer]:
    """One tab per view, bound to ?view= and lazy: only the open tab's content is computed
    and sent (check `.open`). A ?view= naming no view gets one line naming it, and the
    default view is shown."""
    asked = st.query_params.get_all(VIEW_KEY)
    if asked and asked[-1] not in labels:
        st.error(plain(f"?{VIEW_KEY}={cut(asked[-1], 40)!r} is not a view of this page "
                       f"(views: {', '.join(labels)}); showing {default}."),
                 icon=":material/error:")
        st.query_params.pop(VIEW_KEY, None)
    return st.tabs(list(labels), key=VIEW_KEY, bind="query-params", default=default)


def open_view(labels: Sequence[str]) -> str | None:
    """The label of the open view (after view_tabs)."""
    value = st.session_state.get(VIEW_KEY)
    return value if value in labels else None


def run_share_url(run_id: int) -> str:
    """This Run page's link as it is drawn now: the open view, the timeline's batch size
    and toggles, from the URL (which the tabs, picker and toggles keep). A bad value the
    page already named is left out rather than shared."""
    batch = st.query_params.get("batch")
    try:
        fit = links.parse_flag(st.query_params.get_all(links.FIT_PARAM), links.FIT_PARAM)
    except links.LinkError:
        fit = False
    return links.run_url(app_url(), run_id,
                         batch=int(batch) if batch and batch.isascii() and batch.isdigit()
                         else None, view=open_view(links.RUN_VIEWS), fit=fit)
