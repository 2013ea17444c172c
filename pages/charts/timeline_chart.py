"""The step timeline's chart (issue 12): for each trace kept at one batch size, a CPU lane
of launch calls above a GPU lane of kernels on one time axis in microseconds, the GPU's
idle gaps shaded. Eager's gaps and a graph's packed kernels, one above the other. Each
pair spans its step's own time (first launch to last kernel end; issue 25) with the
point's timed median beside the profiled figure. The frames it draws are
pages/logic/timeline.py's; the page glue (picker, toggle, downloads) is
pages/widgets/timeline_view.py's.

Modes are stacked as a vertical concat rather than one layered chart: "fit each" gives
every mode its own time axis, which one chart cannot. The width is therefore fixed.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from contract import trace as tr
from pages.logic.timeline import GAP_KINDS, LANES, PICK, frame, gaps_frame, span_us

WIDTH, LANE_HEIGHT = 660, 34
# What each event is drawn as; the GPU's idle gaps are a pale wash behind its lane.
KINDS = ["launch", "graph", "copy", "kernel", "gpu-copy"]
KIND_COLORS = ["#4c78a8", "#e45756", "#9d755d", "#54a24b", "#b279a2"]


def clickable(chart: alt.LayerChart) -> alt.LayerChart:
    """The speedup chart with a click selection on its points: clicking one picks its
    batch size for the timeline (picked_batch reads the selection back)."""
    pick = alt.selection_point(name=PICK, fields=["batch_size"], on="click")
    # Changed in place, not deep-copied: a deep copy of the layers and their data cost
    # 0.4 s per render at the bench's scale, and the chart is built fresh each run anyway.
    for i, layer in enumerate(chart.layer):
        mark = layer.mark if isinstance(layer.mark, str) else getattr(layer.mark, "type", None)
        if mark == "point":
            chart.layer[i] = layer.add_params(pick)
            break
    return chart


def title_of(label: str, trace: dict, timed_ms: float | None = None) -> alt.TitleParams:
    sub = [tr.idle_text(trace, timed_ms)]
    if trace["dropped"]:  # every stored trace counts them (contract/trace.py validate_trace)
        sub.append(f"first {len(trace['cpu']) + len(trace['gpu']):,} events shown, "
                   f"{trace['dropped']:,} more not kept")
    return alt.TitleParams(label, subtitle=" · ".join(sub), anchor="start", fontSize=13)


def lane_chart(label: str, trace: dict, x_max: float, width: int = WIDTH,
               timed_ms: float | None = None) -> alt.LayerChart | alt.FacetChart:
    """One mode's pair of lanes on an x axis from 0 (its first host call) to x_max
    microseconds (alt.layer's chart: a FacetChart only were a layer faceted, and none
    is)."""
    x_scale = alt.Scale(domain=[0, x_max], nice=False, zero=True)
    y = alt.Y("lane:N", sort=LANES, title=None, scale=alt.Scale(domain=LANES),
              axis=alt.Axis(labelLimit=160))
    wash = gaps_frame(trace)

    def washed(kind: str, color: str) -> alt.Chart:
        return alt.Chart(wash[wash["gap"] == kind]).mark_rect(
            color=color, opacity=0.25, clip=True).encode(
            x=alt.X("start_us:Q", scale=x_scale, title="time in the step (µs)"),
            x2="end_us:Q", y=y,
            tooltip=[alt.Tooltip("what:N", title="GPU"),
                     alt.Tooltip("gap_us:Q", title="for (µs)", format=",.1f"),
                     alt.Tooltip("start_us:Q", title="from (µs)", format=",.1f")])

    # One fixed-colour layer per kind present: a colour encoding would join the kernels'
    # legend, which the stacked pairs share.
    gaps = [washed(kind, color) for kind, (_, color) in GAP_KINDS.items()
            if (wash["gap"] == kind).any()]
    bars = alt.Chart(frame(trace)).mark_bar(height=LANE_HEIGHT * 0.6, clip=True).encode(
        x=alt.X("start_us:Q", scale=x_scale, title="time in the step (µs)"),
        x2="end_us:Q", y=y,
        color=alt.Color("kind:N", scale=alt.Scale(domain=KINDS, range=KIND_COLORS),
                        legend=alt.Legend(orient="top", title=None,
                                          labelExpr=_legend_labels())),
        tooltip=[alt.Tooltip("name:N", title="name"),
                 alt.Tooltip("dur_us:Q", title="duration (µs)", format=",.2f"),
                 alt.Tooltip("start_us:Q", title="start (µs)", format=",.2f"),
                 alt.Tooltip("what:N", title="kind"), alt.Tooltip("stream:N", title="stream")])
    return alt.layer(*gaps, bars).properties(
        title=title_of(label, trace, timed_ms), width=width, height=LANE_HEIGHT * 2)


def _legend_labels() -> str:
    cases = " : ".join(f"datum.value == '{k}' ? '{v}'" for k, v in tr.KIND_LABELS.items())
    return f"{cases} : datum.value"


def timeline_chart(items: Sequence[tuple], same_scale: bool = True,
                   width: int = WIDTH) -> alt.VConcatChart | None:
    """Every (label, trace) or (label, trace, timed step ms) as a lane pair, stacked; None
    when there is none. Each pair is drawn over its step's own span (first host call to
    last kernel end), its timed median beside the profiled figure. With `same_scale` every
    pair shares the longest span's axis (eager's 1 ms beside a graph's 0.1 ms shows the
    gap), otherwise each fits its own step."""
    items = [(x[0], x[1], x[2] if len(x) > 2 else None) for x in items if x[1]]
    if not items:
        return None
    longest = max(span_us(t) for _, t, _ in items)
    pairs = [lane_chart(label, t, longest if same_scale else span_us(t), width, timed)
             for label, t, timed in items]
    return alt.vconcat(*pairs, spacing=18).resolve_scale(color="shared")


def timeline_spec(items: Sequence[tuple], same_scale: bool = True,
                  width: int = WIDTH) -> dict | None:
    """timeline_chart as a Vega-Lite spec (what a page caches: building and validating
    the chart is most of its cost)."""
    chart = timeline_chart(items, same_scale, width)
    return None if chart is None else chart.to_dict()
