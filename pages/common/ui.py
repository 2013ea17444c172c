"""The one thin streamlit helper module: the cached engine, cached queries, URL parameters
with clear messages, and a few repeated widgets. No maths here (pages.common.analysis),
no SQL (db.queries).
"""

from __future__ import annotations

import contextlib
import runpy
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from db import graph_memory as dbgm
from db import queries
from db.engine import default_url, make_engine
from db.engine import shown_url as engine_shown_url
from db.samples import SAMPLES, SeedResult, seed_if_empty
from pages.common import board as boards
from pages.common import links, timeline
from pages.common.plain import plain

APP_PATH = Path(__file__).resolve().parents[2] / "app.py"

# Query results live this long at most; data_v (queries.data_version) in each cache key
# already invalidates them as soon as anything is written, by this process or by a worker
# elsewhere. (Its name must not start with "_": st.cache_data does not hash those.)
CACHE_TTL_S = 60
PAGES = {name: spec.file for name, spec in links.PAGES.items()}  # for st.page_link
ROOT = Path(__file__).resolve().parents[2]


def has_page(name: str) -> bool:
    """launch and serve are built by other parts of the project: link them once present."""
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


def db_url() -> str:
    return default_url()


def shown_url(url: str | None = None) -> str:
    """The database URL without its password, for the sidebar."""
    return engine_shown_url(url or db_url())


@st.cache_resource(show_spinner=False)
def _engine_for(url: str, read_only: bool):
    # One engine (and connection pool) per database URL and mode for the whole server
    # process. A read-only engine opens the database read-only and never migrates it.
    return make_engine(url, read_only=read_only)


def _engine(url: str):
    from db.access import read_only

    return _engine_for(url, read_only())


def engine():
    return _engine(db_url())


@st.cache_resource(show_spinner="Importing the sample runs...")
def _seed(url: str, folder: str) -> SeedResult:
    # Once per server process and database: a database emptied later is not refilled.
    return seed_if_empty(_engine(url), folder)


def seed(folder: str | None = None) -> SeedResult:
    try:
        return _seed(db_url(), str(folder or SAMPLES))
    except SQLAlchemyError as e:
        # The app still opens (the pages say what they can); the sidebar names the cause.
        first = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        return SeedResult(errors=[f"cannot import the samples: {first}"])


def version() -> tuple:
    return queries.data_version(engine())


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _runs(url: str, data_v: tuple, gpus: tuple, workloads: tuple, torches: tuple) -> pd.DataFrame:
    return queries.runs_frame(_engine(url), gpus=gpus, workloads=workloads, torches=torches)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _options(url: str, data_v: tuple) -> dict:
    return queries.run_filter_options(_engine(url))


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=256)
def _headers(url: str, data_v: tuple, ids: tuple) -> pd.DataFrame:
    return queries.runs_headers(_engine(url), ids)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=256)
def _points(url: str, data_v: tuple, ids: tuple) -> pd.DataFrame:
    return queries.runs_points(_engine(url), ids)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _key_points(url: str, data_v: tuple, ids: tuple) -> pd.DataFrame:
    return queries.key_points(_engine(url), ids)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _serve_keys(url: str, data_v: tuple, ids: tuple) -> pd.DataFrame:
    return queries.serve_key_results(_engine(url), ids)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _trend_runs(url: str, data_v: tuple, workload: str, gpu: str) -> pd.DataFrame:
    return queries.trend_runs(_engine(url), workload, gpu)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _board(url: str, data_v: tuple, gpus: tuple, workloads: tuple,
           torches: tuple) -> pd.DataFrame:
    # The whole table per database state and filters: a rerun, another reader, another
    # session reads it back in milliseconds; a write anywhere changes data_v. The points
    # go straight from the query into the board, not through _key_points: 100,000 of
    # them pickled into the cache would cost more than they save.
    engine = _engine(url)
    runs = _runs(url, data_v, gpus, workloads, torches)
    sweeps = runs.loc[runs["kind"] == "sweep", "id"]
    serves = runs.loc[runs["kind"] == "serve", "id"]
    captures = runs.loc[runs["kind"] == "graph-memory", "id"]
    return boards.board(runs, queries.key_points(engine, tuple(int(i) for i in sweeps)),
                        queries.serve_key_results(engine, tuple(int(i) for i in serves)),
                        dbgm.attributions(engine, tuple(int(i) for i in captures)))


def board(gpus: Sequence[str] = (), workloads: Sequence[str] = (),
          torches: Sequence[str] = ()) -> pd.DataFrame:
    """The Runs page's table (pages.common.board.board), cached per database state."""
    return _board(db_url(), version(), tuple(gpus), tuple(workloads), tuple(torches))


def key_points(ids: Sequence[int]) -> pd.DataFrame:
    """The points of many runs, without raw samples (the Runs board, Trends)."""
    return _key_points(db_url(), version(), tuple(int(i) for i in ids))


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=16)
def _graph_memory_runs(url: str, data_v: tuple) -> pd.DataFrame:
    return dbgm.graph_memory_runs(_engine(url))


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=32)
def _graph_memory_doc(url: str, data_v: tuple, run_id: int) -> dict:
    return dbgm.graph_memory_doc(_engine(url), run_id)


def graph_memory_runs() -> pd.DataFrame:
    """Every stored graph-memory run, newest first (db/graph_memory.py)."""
    return _graph_memory_runs(db_url(), version())


def graph_memory_doc(run_id: int) -> dict:
    """A stored graph-memory run as a document: gm.curve() and the curve charts read it.
    RunNotFound / NotGraphMemory as db.graph_memory.graph_memory_doc raises them."""
    return _graph_memory_doc(db_url(), version(), int(run_id))


def serve_keys(ids: Sequence[int]) -> pd.DataFrame:
    return _serve_keys(db_url(), version(), tuple(int(i) for i in ids))


def trend_runs(workload: str, gpu: str) -> pd.DataFrame:
    return _trend_runs(db_url(), version(), workload, gpu)


def runs(gpus: Sequence[str] = (), workloads: Sequence[str] = (),
         torches: Sequence[str] = ()) -> pd.DataFrame:
    return _runs(db_url(), version(), tuple(gpus), tuple(workloads), tuple(torches))


def filter_options() -> dict:
    return _options(db_url(), version())


def headers(ids: Sequence[int]) -> pd.DataFrame:
    return _headers(db_url(), version(), tuple(int(i) for i in ids))


def points(ids: Sequence[int]) -> pd.DataFrame:
    return _points(db_url(), version(), tuple(int(i) for i in ids))


def clear_caches() -> None:
    """After a write in this process (import, launch): drop every cached query result."""
    st.cache_data.clear()


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
                facts = delete_run(engine(), run_id)
            except (PermissionError, LookupError, SQLAlchemyError) as e:
                st.error(plain(str(e).strip().splitlines()[0]))
                return
            clear_caches()
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
    """An Altair chart stretched to its container (pages.common.charts builds single or
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
        from pages.common.report import PUBLISHED_NOTE

        st.info(f"{PUBLISHED_NOTE} Source: {plain(header.get('label') or 'unknown')}",
                icon=":material/article:")


# --- the step timeline (issue 12): one profiled step per point, read per batch size --------

@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _traces(url: str, data_v: tuple, ids: tuple, batch: int) -> list:
    return queries.point_traces(_engine(url), ids, batch)


def traces(ids: Sequence[int], batch: int) -> list[dict]:
    return _traces(db_url(), version(), tuple(int(i) for i in ids), int(batch))


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=64)
def _timeline_spec(url: str, data_v: tuple, ids: tuple, batch: int, labels: tuple,
                   same_scale: bool) -> dict | None:
    """The stacked lanes' spec for `labels` ((label, run_id, mode, timed step ms), ...),
    cached."""
    by = {(x["run_id"], x["mode"]): x["trace"] for x in _traces(url, data_v, ids, batch)}
    return timeline.timeline_spec([(label, by[(rid, mode)], timed)
                                   for label, rid, mode, timed in labels], same_scale)


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
    items = [x for x in timeline.ordered(traces(run_ids, batch))
             if mode is None or x["mode"] == mode]
    labels = tuple((label_of(x), x["run_id"], x["mode"],
                    timeline.timed_ms(points, x["run_id"], x["mode"], batch)) for x in items)
    spec = _timeline_spec(db_url(), version(), tuple(int(i) for i in run_ids), int(batch),
                          labels, not fit)
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
