"""The step timeline (issue 12): for each trace kept at one batch size, a CPU lane of
launch calls above a GPU lane of kernels on one time axis in microseconds, the GPU's idle
gaps shaded and totalled. Eager's gaps and a graph's packed kernels, one above the other.
Each pair spans its step's own time (first launch to last kernel end; issue 25) with the
point's timed median beside the profiled figure.

Pure: frames and Altair charts from the traces runner/format/trace.py defines; the page
glue (picker, toggle, downloads) is pages.widgets.frame.timeline_section.

Modes are stacked as a vertical concat rather than one layered chart: "fit each" gives
every mode its own time axis, which one chart cannot. The width is therefore fixed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import altair as alt
import pandas as pd

from pages.logic import analysis
from runner.format import trace as tr
from runner.format.limits import MAX_BATCH_SIZE
from runner.format.verdict import INCONCLUSIVE
from runner.format.vocab import MODES

CPU_LANE, GPU_LANE = "CPU launches", "GPU kernels"
LANES = [CPU_LANE, GPU_LANE]
WIDTH, LANE_HEIGHT = 660, 34
# What each event is drawn as; the GPU's idle gaps are a pale wash behind its lane.
KINDS = ["launch", "graph", "copy", "kernel", "gpu-copy"]
KIND_COLORS = ["#4c78a8", "#e45756", "#9d755d", "#54a24b", "#b279a2"]
GAP_COLOR = "#f2b701"
# The batch size the article draws (and the one to open on when a run has it).
PREFERRED_BATCH = 8
PICK = "pick_batch"  # the speedup chart's click selection
STEP_TIMES_NOTE = tr.STEP_TIMES_NOTE


class BatchError(ValueError):
    """A ?batch= value that cannot be shown. str() is the one line on the page."""


def batch_sizes(points: pd.DataFrame) -> list[int]:
    """Batch sizes with at least one ok point, ascending."""
    if points.empty:
        return []
    ok = points[points["status"] == "ok"]
    return sorted({int(b) for b in ok["batch_size"]})


def modes_at(points: pd.DataFrame, batch: int) -> list[str]:
    """Modes with an ok point at `batch`, in mode order."""
    ok = points[(points["status"] == "ok") & (points["batch_size"] == batch)]
    return [m for m in MODES if m in set(ok["mode"])]


def parse_batch(text: str | None, options: Sequence[int]) -> int | None:
    """The batch size of ?batch=...; None when absent. BatchError names a value that is not
    a batch size, or one this run did not measure."""
    if text is None or not str(text).strip():
        return None
    s = str(text).strip()
    digits = len(str(MAX_BATCH_SIZE))  # refuse a long string before int() reads it
    if not (s.isascii() and s.isdigit()) or len(s) > digits or not 1 <= int(s) <= MAX_BATCH_SIZE:
        raise BatchError(f"?batch={s[:40]!r} is not a batch size: expected a whole number "
                         f"from 1 to {MAX_BATCH_SIZE}, such as ?batch=8")
    if int(s) not in options:
        have = ", ".join(str(b) for b in options) or "none"
        raise BatchError(f"?batch={int(s)}: no point was measured at batch size {int(s)} "
                         f"(measured: {have}); showing another")
    return int(s)


def default_batch(options: Sequence[int]) -> int | None:
    if not options:
        return None
    return PREFERRED_BATCH if PREFERRED_BATCH in options else min(options)


def headline_batch(points: pd.DataFrame) -> int | None:
    """The batch size the report draws: where the run's largest speedup is; without one,
    the default."""
    best = analysis.largest_speedups(points)
    best = best[best["verdict"] != INCONCLUSIVE] if not best.empty else best
    if not best.empty and best["speedup"].notna().any():
        return int(best.loc[best["speedup"].idxmax(), "batch_size"])
    return default_batch(batch_sizes(points))


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


def picked_batch(selection) -> int | None:
    """The batch size of a clicked point, from streamlit's selection state."""
    try:
        rows = selection[PICK]
        return int(rows[0]["batch_size"]) if rows else None
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def ordered(items: Sequence[dict]) -> list[dict]:
    """Traces in mode order (eager first, the graphs last), for stacking."""
    rank = {m: i for i, m in enumerate(MODES)}
    return sorted(items, key=lambda x: (rank.get(x.get("mode"), len(rank)),
                                        x.get("run_id", 0)))


def frame(trace: dict) -> pd.DataFrame:
    """The trace's events on the step's own time axis: 0 at its first host call
    (runner/format/trace.py step_span); what lies before it is the profiler's lead-in."""
    lo, _ = tr.step_span(trace)
    rows = [dataclasses.asdict(e) for e in tr.events(trace)]  # the frame's rows
    df = pd.DataFrame(rows, columns=["lane", "kind", "name", "start_us", "end_us", "dur_us",
                                     "stream"])
    df["start_us"] -= lo
    df["end_us"] -= lo
    df["lane"] = df["lane"].map({"cpu": CPU_LANE, "gpu": GPU_LANE})
    df["what"] = df["kind"].map(tr.KIND_LABELS)
    df["stream"] = [("—" if pd.isna(v) else str(int(v))) for v in df["stream"]]
    return df


# The GPU lane's background: idle (waiting for the host) or, before a step whose host ran
# ahead, still busy with the previous step: not idle, so not the idle colour.
GAP_KINDS = {"idle": ("GPU idle, waiting for the host", GAP_COLOR),
             "queued": ("GPU busy with the previous step (the host ran ahead)", "#9e9e9e")}


def gaps_frame(trace: dict) -> pd.DataFrame:
    """The GPU lane's idle gaps, and a queued start where the host ran ahead, on the
    step's own time axis (frame's)."""
    g = tr.gpu_idle(trace)
    lo, _ = tr.step_span(trace)
    spans = [("queued", *g.queued)] if g.queued else []
    spans += [("idle", s, e) for s, e in g.gaps]
    return pd.DataFrame({"lane": GPU_LANE, "gap": [k for k, _, _ in spans],
                         "what": [GAP_KINDS[k][0] for k, _, _ in spans],
                         "start_us": [s - lo for _, s, _ in spans],
                         "end_us": [e - lo for _, _, e in spans],
                         "gap_us": [e - s for _, s, e in spans]})


def span_us(trace: dict) -> float:
    lo, hi = tr.step_span(trace)
    return hi - lo


def title_of(label: str, trace: dict, timed_ms: float | None = None) -> alt.TitleParams:
    sub = [tr.idle_text(trace, timed_ms)]
    if trace.get("dropped"):
        sub.append(f"first {len(trace['cpu']) + len(trace['gpu']):,} events shown, "
                   f"{trace['dropped']:,} more not kept")
    return alt.TitleParams(label, subtitle=" · ".join(sub), anchor="start", fontSize=13)


def lane_chart(label: str, trace: dict, x_max: float, width: int = WIDTH,
               timed_ms: float | None = None) -> alt.LayerChart:
    """One mode's pair of lanes on an x axis from 0 (its first host call) to x_max
    microseconds."""
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


def timed_ms(points: pd.DataFrame, run_id: int, mode: str, batch: int) -> float | None:
    """The point's timed step (median of its rounds), to stand beside the profiled one."""
    if points.empty:
        return None
    at = points[(points["run_id"] == run_id) & (points["mode"] == mode)
                & (points["batch_size"] == batch) & (points["status"] == "ok")]
    v = pd.to_numeric(at["step_ms"], errors="coerce").dropna()
    return float(v.iloc[0]) if len(v) else None


def chrome_trace_text(label: str, trace: dict) -> str:
    """One point's trace as Chrome trace / Perfetto JSON text."""
    return json.dumps(tr.chrome_trace([(label, trace)]), separators=(",", ":"))


def file_name(run_id: int, mode: str, batch: int) -> str:
    return f"launchbench-run-{run_id}-{mode}-b{batch}.trace.json"
