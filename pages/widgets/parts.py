"""The widgets pages repeat: a part drawn or said broken in its own place, URL parameters
with clear messages, charts stretched to their column, badges, the run delete button and
the step timeline section. Data comes from pages.widgets.data; no maths here
(pages.logic.analysis), no SQL (db/).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from pages.logic import links, timeline
from pages.logic.plain import plain
from pages.widgets import data
from pages.widgets.frame import PAGES


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
    from db.access import read_only
    from db.store import delete_run

    if read_only():
        return
    with st.popover("Delete this run", icon=":material/delete:"):
        st.caption("Removes the run, its points and its serve data from this database. "
                   "Export its bundle first to keep a copy.")
        if st.button(f"Delete run {run_id}", key="delete_run", type="primary"):
            try:
                facts = delete_run(data.engine(), run_id)
            except (PermissionError, LookupError, SQLAlchemyError) as e:
                st.error(plain(str(e).strip().splitlines()[0]))
                return
            data.clear_caches()
            st.success(f"Deleted run {run_id} ({facts['points']} points).")


# --- URL parameters -----------------------------------------------------------------------

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


def chart(chart, key: str) -> None:
    """An Altair chart stretched to its container (pages.charts.run_charts builds single or
    layered charts only, so every one can stretch)."""
    st.altair_chart(chart, key=key, width="stretch")


def share_link(url: str) -> None:
    """A copyable link (st.code has a copy button)."""
    st.caption("Share link: this URL shows the same view in any browser")
    st.code(url, language=None)


# One colour and icon per noise level (analysis.NOISE_LEVELS), for run and point badges.
NOISE_BADGES = {"ok": ("green", ":material/check_circle:"),
                "noisy": ("orange", ":material/graphic_eq:"),
                "host unstable": ("red", ":material/warning:"),
                "no interval": ("gray", ":material/remove:")}


def noise_badge(level: str, text: str) -> None:
    color, icon = NOISE_BADGES.get(level, NOISE_BADGES["no interval"])
    st.badge(f"Noise: {text}", icon=icon, color=color)


def published_banner(header) -> None:
    if header.get("source") == "published":
        from pages.charts.report import PUBLISHED_NOTE

        st.info(f"{PUBLISHED_NOTE} Source: {plain(header.get('label') or 'unknown')}",
                icon=":material/article:")



# --- the step timeline (issue 12): one profiled step per point, read per batch size --------

def chart_picking_batch(chart, key: str, target: str = "timeline",
                        view: tuple[str, str] | None = None) -> None:
    """The speedup chart, clickable: a click on a point shows that batch size's timeline
    (the picker `target`_batch follows it, and so does ?batch=). `view` (tabs key, label):
    the click also opens that tab, set in the callback, before the tabs are drawn again."""

    def picked() -> None:
        batch = timeline.picked_batch(getattr(st.session_state.get(key), "selection", None))
        if batch is None:
            return
        st.session_state[f"{target}_batch"] = batch
        st.query_params["batch"] = str(batch)
        if view is not None:
            st.session_state[view[0]] = view[1]

    st.altair_chart(timeline.clickable(chart), key=key, width="stretch", on_select=picked,
                    selection_mode=timeline.PICK)


VIEW_KEY = links.VIEW_PARAM  # the tabs' key is the URL parameter's name


def view_tabs(labels: Sequence[str], default: str) -> list:
    """One tab per view, bound to ?view= and lazy: only the open tab's content is computed
    and sent (check `.open`). A ?view= naming no view gets one line naming it, and the
    default view is shown."""
    asked = st.query_params.get_all(VIEW_KEY)
    if asked and asked[-1] not in labels:
        st.error(plain(f"?{VIEW_KEY}={asked[-1]!r} is not a view of this page (views: "
                       f"{', '.join(labels)}); showing {default}."), icon=":material/error:")
        st.query_params.pop(VIEW_KEY, None)
    return st.tabs(list(labels), key=VIEW_KEY, bind="query-params", default=default)


def open_view(labels: Sequence[str]) -> str | None:
    """The label of the open view (after view_tabs)."""
    value = st.session_state.get(VIEW_KEY)
    return value if value in labels else None


def batch_from_url(options: Sequence[int], param: str = "batch") -> int | None:
    """?batch=N when this view has it; a bad value gets one line naming it, and the
    default batch size is shown instead."""
    values = st.query_params.get_all(param)
    try:
        asked = timeline.parse_batch(values[-1] if values else None, options)
    except timeline.BatchError as e:
        st.error(plain(e), icon=":material/error:")
        asked = None
    return asked if asked is not None else timeline.default_batch(options)


TIMELINE_ANCHOR = "timeline"  # the timeline heading's id: /run?run=ID#timeline scrolls

# Scrolls the parent page to the heading once it is laid out. The charts above it render
# after it mounts and push it down, so it tries again until the heading has stayed in
# place for a moment (or 5 s pass), and stops at once if the reader scrolls (wheel, touch,
# key, a press on the scrollbar) rather than pulling the page from under them.
_SCROLL_JS = """<script>
const w = window.parent, doc = w.document;
let left = 25, still = 0, stop = false;
for (const e of ["wheel", "touchmove", "keydown", "mousedown"])
  w.addEventListener(e, () => stop = true, {once: true, capture: true});
(function go() {
  const el = doc.getElementById(%s);
  if (el && !stop) {
    if (Math.abs(el.getBoundingClientRect().top) > 4) { el.scrollIntoView(); still = 0; }
    else still++;
  }
  if (!stop && still < 4 && left-- > 0) setTimeout(go, 200);
})();
</script>"""


def scroll_to_on_arrival(anchor: str, asked: bool, key: str) -> None:
    """Scroll to the heading `anchor` when the page was opened with something below the
    fold asked for (`asked`: a ?batch= in the link), once per session and key: a reader
    who then picks another batch size is not thrown about.

    Streamlit scrolls to a heading natively only for a #anchor in the URL; a share link
    such as /run?run=ID&batch=8 has none, and Python cannot scroll a browser. Hence these
    few lines of script, in a zero-height components.html frame (same origin, so it may
    reach the page it sits in)."""
    import json

    import streamlit.components.v1 as components

    # Decided on the page's first run in the session only: the page itself writes
    # ?batch= into the URL, so on any later rerun it is there whether asked for or not.
    seen = f"_scrolled_{key}"
    if st.session_state.get(seen):
        return
    st.session_state[seen] = True
    if asked:
        components.html(_SCROLL_JS % json.dumps(anchor), height=0)


def timeline_section(run_ids: Sequence[int], points: pd.DataFrame, label_of, key: str,
                     pick_mode: bool = False) -> int | None:
    """Batch picker (mirrored in ?batch=), scale toggle, the stacked lanes, and one
    Perfetto download per point; returns the batch size drawn (None: no timeline).
    `label_of(item)` names a lane pair; `pick_mode` adds a mode picker and draws that mode
    only (Compare: one pair per run)."""
    options = timeline.batch_sizes(points)
    if not options:
        st.caption("No timeline: this view has no ok point.")
        return None
    start = batch_from_url(options)
    if st.session_state.get(f"{key}_batch") not in (None, *options):
        del st.session_state[f"{key}_batch"]  # a batch size this view does not have
    left, middle, right = st.columns([1, 1, 2])
    # Once the picker has a value (chosen, or set by a click on the speedup chart) it
    # wins; an index beside a value set through session state would draw a warning.
    first = {} if f"{key}_batch" in st.session_state else {"index": options.index(start)}
    batch = left.selectbox("Batch size", options, key=f"{key}_batch", **first)
    mode = None
    if pick_mode:
        modes = timeline.modes_at(points, batch)
        mode = middle.selectbox("Mode", modes, key=f"{key}_mode")
    fit = right.toggle("Fit each to its own step (off: one time scale for all)",
                       key=f"{key}_fit")
    items = [x for x in timeline.ordered(data.traces(run_ids, batch))
             if mode is None or x["mode"] == mode]
    labels = tuple((label_of(x), x["run_id"], x["mode"],
                    timeline.timed_ms(points, x["run_id"], x["mode"], batch)) for x in items)
    spec = data.timeline_spec(run_ids, batch, labels, not fit)
    if spec is None:
        st.info(f"No step timeline at batch size {batch}: none was kept (CPU runs, "
                "failed points and runs measured before bundle version 4 have none).")
        return None
    st.query_params["batch"] = str(batch)  # the link carries what is drawn
    st.vega_lite_chart(spec, key=f"{key}_chart")
    st.caption("One profiled step per point (not the first: the one whose GPU busy time "
               "is closest to the point's mean), from its first launch to its last "
               "kernel's end. Shaded yellow: the GPU idle, waiting for the host; grey: the "
               "GPU still busy with the previous step. " + timeline.STEP_TIMES_NOTE +
               " Download a point's trace for ui.perfetto.dev or chrome://tracing:")
    for col, x in zip(st.columns(min(len(items), 4)) * len(items), items, strict=False):
        col.download_button(
            f"{label_of(x)} (.json)", timeline.chrome_trace_text(label_of(x), x["trace"]),
            timeline.file_name(x["run_id"], x["mode"], batch), "application/json",
            key=f"{key}_dl_{x['run_id']}_{x['mode']}", on_click="ignore",
            icon=":material/download:")
    return batch
