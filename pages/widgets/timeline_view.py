"""The step timeline on a page (issue 12): the batch picker mirrored in ?batch=, the scale
toggle, the stacked lanes (pages/charts/timeline_chart.py), one Perfetto download per
point, the speedup chart whose click picks a batch size, and the scroll to the timeline
for a link that asks for one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import streamlit as st

from contract.measurement import Measurement
from contract.trace import PointTrace
from pages.charts import timeline_chart
from pages.logic import links, timeline
from pages.logic.plain import plain
from pages.widgets import data, url


def chart_picking_batch(spec: dict, key: str, target: str = "timeline",
                        view: tuple[str, str] | None = None) -> None:
    """The speedup chart's spec, made clickable by timeline_chart.clickable: a click on a
    point shows that batch size's timeline (the picker `target`_batch follows it, and so
    does ?batch=). `view` (tabs key, label): the click also opens that tab, set in the
    callback, before the tabs are drawn again."""

    def picked() -> None:
        batch = timeline.picked_batch(getattr(st.session_state.get(key), "selection", None))
        if batch is None:
            return
        st.session_state[f"{target}_batch"] = batch
        st.query_params["batch"] = str(batch)
        if view is not None:
            st.session_state[view[0]] = view[1]

    st.vega_lite_chart(spec=spec, key=key, width="stretch", on_select=picked,
                       selection_mode=timeline.PICK)


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


# Scrolls the page to the heading once it is laid out. The charts above it render after
# it mounts and push it down, so it tries again until the heading has stayed in place for
# a moment (or 5 s pass), and stops at once if the reader scrolls (wheel, touch, key, a
# press on the scrollbar) rather than pulling the page from under them. Run in the page
# itself (st.html), so its names live in a function: a second page's script in the same
# tab would redeclare them.
_SCROLL_JS = """<script>
(() => {
  let left = 25, still = 0, stop = false;
  for (const e of ["wheel", "touchmove", "keydown", "mousedown"])
    window.addEventListener(e, () => stop = true, {once: true, capture: true});
  (function go() {
    const el = document.getElementById(%s);
    if (el && !stop) {
      if (Math.abs(el.getBoundingClientRect().top) > 4) { el.scrollIntoView(); still = 0; }
      else still++;
    }
    if (!stop && still < 4 && left-- > 0) setTimeout(go, 200);
  })();
})();
</script>"""


def scroll_to_on_arrival(anchor: str, asked: bool, key: str) -> None:
    """Scroll to the heading `anchor` when the page was opened with something below the
    fold asked for (`asked`: a ?batch= in the link), once per session and key: a reader
    who then picks another batch size is not thrown about.

    Streamlit scrolls to a heading natively only for a #anchor in the URL; a share link
    such as /run?run=ID&batch=8 has none, and Python cannot scroll a browser. Hence these
    few lines of script, run in the page itself by st.html (no height on the page; the
    script is ours, no reader's text is in it). Not components.v1.html, deprecated (each
    call logged a warning), nor st.iframe, its successor: a frame of a script alone
    still took 150 px of the page."""
    import json

    # Decided on the page's first run in the session only: the page itself writes
    # ?batch= into the URL, so on any later rerun it is there whether asked for or not.
    seen = f"_scrolled_{key}"
    if st.session_state.get(seen):
        return
    st.session_state[seen] = True
    if asked:
        st.html(_SCROLL_JS % json.dumps(anchor), unsafe_allow_javascript=True)


MODE_PARAM = "mode"  # Compare's timeline: the mode drawn for every run


def timeline_section(run_ids: Sequence[int], points: Mapping[int, Sequence[Measurement]],
                     label_of: Callable[[PointTrace], str], key: str,
                     pick_mode: bool = False) -> int | None:
    """Batch picker (mirrored in ?batch=), scale toggle, the stacked lanes, and one
    Perfetto download per point; returns the batch size drawn (None: no timeline).
    `label_of(item)` names a lane pair; `pick_mode` adds a mode picker and draws that mode
    only (Compare: one pair per run)."""
    every = [m for pts in points.values() for m in pts]
    options = timeline.batch_sizes(every)
    if not options:
        st.caption("No timeline: this view has no ok point.")
        return None
    start = batch_from_url(options)
    assert start is not None  # options is not empty: default_batch picks one of them
    if st.session_state.get(f"{key}_batch") not in (None, *options):
        del st.session_state[f"{key}_batch"]  # a batch size this view does not have
    left, middle, right = st.columns([1, 1, 2])
    # Once the picker has a value (chosen, or set by a click on the speedup chart) it
    # wins; an index beside a value set through session state would draw a warning.
    if f"{key}_batch" in st.session_state:
        batch = left.selectbox("Batch size", options, key=f"{key}_batch")
    else:
        batch = left.selectbox("Batch size", options, key=f"{key}_batch",
                               index=options.index(start))
    mode = None
    if pick_mode:
        modes = timeline.modes_at(every, batch)
        # In the URL (?mode=), so a shared link draws the same mode.
        mode = url.choice_param(middle, "selectbox", "Mode", MODE_PARAM, modes,
                                key=f"{key}_mode")
    fit = url.toggle_param(right, "Fit each to its own step (off: one time scale for all)",
                           links.FIT_PARAM, key=f"{key}_fit")
    items = [x for x in timeline.ordered(data.traces(run_ids, batch))
             if mode is None or x.mode == mode]
    labels = tuple((label_of(x), x.run_id, x.mode,
                    timeline.timed_ms(points, x.run_id, x.mode, batch)) for x in items)
    spec = timeline_spec(run_ids, batch, labels, not fit)
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
        # The label is Markdown to streamlit: a run's name (its GPU, its label) is a
        # bundle's text, so it goes through plain() like every other (issue 48).
        col.download_button(
            f"{plain(label_of(x))} (.json)", timeline.chrome_trace_text(label_of(x), x.trace),
            timeline.file_name(x.run_id, x.mode, batch), "application/json",
            key=f"{key}_dl_{x.run_id}_{x.mode}", on_click="ignore",
            icon=":material/download:")
    return batch


def _timeline(engine, ids: tuple, batch: int, labels: tuple, same_scale: bool) -> dict | None:
    """The stacked lanes' spec for `labels` ((label, run_id, mode, timed step ms), ...)."""
    by = {(x.run_id, x.mode): x.trace for x in data.traces(ids, batch)}
    return timeline_chart.timeline_spec([(label, by[(rid, mode)], timed)
                                   for label, rid, mode, timed in labels], same_scale)


def timeline_spec(ids: Sequence[int], batch: int, labels: tuple,
                  same_scale: bool) -> dict | None:
    return data.cached(_timeline, ids, batch, labels, same_scale)
