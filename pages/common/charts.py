"""Altair charts of a run and of a comparison. Each function takes the frames that
pages.common.analysis returns and gives back a chart, or None when there is nothing to draw
(a CPU run has no memory figures; a failed run has no ok point at all).

Axis titles and tooltip formats come from pages.common.metrics, so units live in one place.
Batch sizes are powers of two in practice: a log2 x axis spaces them evenly.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from pages.common import analysis
from pages.common.metrics import metric, title
from runner.bundle import MODES

# One colour per mode everywhere (charts, report), so a reader learns it once.
MODE_COLORS = {"eager": "#7f7f7f", "compile": "#1f77b4", "reduce-overhead": "#d62728",
               "cuda-graph": "#2ca02c"}
WIDTH, HEIGHT = 520, 300


def _mode_color(legend: bool = True) -> alt.Color:
    return alt.Color("mode:N", title="Mode", sort=list(MODES),
                     scale=alt.Scale(domain=list(MODES), range=list(MODE_COLORS.values())),
                     **({} if legend else {"legend": None}))


def _batch_x() -> alt.X:
    return alt.X("batch_size:Q", title=title("batch_size"),
                 scale=alt.Scale(type="log", base=2, nice=False),
                 axis=alt.Axis(format=",d", labelOverlap=True))


def _tip(name: str, fmt: str | None = None) -> alt.Tooltip:
    m = metric(name)
    # d3-format strings for the tooltip, derived from the metric's unit.
    d3 = fmt or {"ms": ".3f", "x": ".2f", "MiB": ",.1f", "s": ".2f"}.get(m.unit, ",.2f")
    return alt.Tooltip(f"{name}:Q", title=m.title, format=d3)


def _mode_tip() -> alt.Tooltip:
    return alt.Tooltip("mode:N", title="Mode")


def _batch_tip() -> alt.Tooltip:
    return alt.Tooltip("batch_size:Q", title="Batch size", format=",d")


def speedup_chart(speedups: pd.DataFrame) -> alt.Chart | None:
    """Speedup over eager against batch size, one line per mode (eager is the 1.0 line)."""
    if speedups.empty:
        return None
    df = speedups[["mode", "batch_size", "speedup", "step_ms", "eager_ms"]]
    base = alt.Chart(df).encode(
        x=_batch_x(),
        y=alt.Y("speedup:Q", title=title("speedup")),
        color=_mode_color(),
        tooltip=[_mode_tip(), _batch_tip(), _tip("speedup"), _tip("step_ms"),
                 _tip("eager_ms")])
    chart = base.mark_line(point=True)
    return chart.properties(width=WIDTH, height=HEIGHT,
                            title="Speedup over eager (higher is better)")


def step_time_chart(points: pd.DataFrame) -> alt.Chart | None:
    """Median step time against batch size, log-log, with the p10-p90 band per mode."""
    ok = analysis.usable(points)
    if ok.empty:
        return None
    df = ok[["mode", "batch_size", "step_ms", "step_ms_p10", "step_ms_p90"]]
    y = alt.Y("step_ms:Q", title=title("step_ms"), scale=alt.Scale(type="log"))
    line = alt.Chart(df).mark_line(point=True).encode(
        x=_batch_x(), y=y, color=_mode_color(),
        tooltip=[_mode_tip(), _batch_tip(), _tip("step_ms"), _tip("step_ms_p10"),
                 _tip("step_ms_p90")])
    banded = df.dropna(subset=["step_ms_p10", "step_ms_p90"])
    layers = [line]
    if not banded.empty:
        band = alt.Chart(banded).mark_area(opacity=0.2).encode(
            x=_batch_x(), y=alt.Y("step_ms_p10:Q", title=title("step_ms"),
                                  scale=alt.Scale(type="log")),
            y2="step_ms_p90:Q", color=_mode_color(legend=False))
        layers.insert(0, band)
    return alt.layer(*layers).properties(
        width=WIDTH, height=HEIGHT, title="Step time, median with p10-p90 band (lower is better)")


MEMORY_METRICS = ("graph_pool_bytes", "peak_allocated_bytes")


def memory_chart(points: pd.DataFrame) -> alt.FacetChart | None:
    """What the modes cost in memory: graph pool and peak allocated, in MiB, per mode."""
    ok = analysis.usable(points)
    if ok.empty:
        return None
    long = ok.melt(id_vars=["mode", "batch_size"], value_vars=list(MEMORY_METRICS),
                   var_name="metric", value_name="bytes").dropna(subset=["bytes"])
    if long.empty:
        return None
    long["MiB"] = long["bytes"] * metric("graph_pool_bytes").scale
    long["metric"] = long["metric"].map(lambda n: metric(n).label)
    return alt.Chart(long).mark_line(point=True).encode(
        x=_batch_x(), y=alt.Y("MiB:Q", title="Memory (MiB)"), color=_mode_color(),
        tooltip=[_mode_tip(), _batch_tip(), alt.Tooltip("metric:N", title="What"),
                 alt.Tooltip("MiB:Q", title="MiB", format=",.1f")],
    ).properties(width=WIDTH // 2 + 40, height=HEIGHT - 40).facet(
        column=alt.Column("metric:N", title=None)
    ).resolve_scale(y="independent").properties(title="Memory cost (lower is better)")


def time_split_chart(split: pd.DataFrame) -> alt.HConcatChart | None:
    """Where the time goes: GPU busy fraction of the step (1.0 = no launch gaps left) and
    host launches per step, per mode."""
    if split.empty:
        return None
    tips = [_mode_tip(), _batch_tip(), _tip("step_ms"), _tip("gpu_busy_ms"), _tip("idle_ms"),
            _tip("busy_fraction", ".0%"), _tip("host_launches_per_step", ".1f"),
            _tip("graph_launches_per_step", ".1f"), _tip("gpu_kernels_per_step", ".1f")]
    charts = []
    busy = split.dropna(subset=["busy_fraction"])
    if not busy.empty:
        line = alt.Chart(busy).mark_line(point=True).encode(
            x=_batch_x(), y=alt.Y("busy_fraction:Q", title=title("busy_fraction"),
                                  axis=alt.Axis(format="%")),
            color=_mode_color(), tooltip=tips)
        rule = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(
            y="y:Q")
        charts.append(alt.layer(line, rule).properties(
            width=WIDTH // 2 + 40, height=HEIGHT - 40, title="GPU busy / step time"))
    launches = split.dropna(subset=["host_launches_per_step"])
    if not launches.empty:
        charts.append(alt.Chart(launches).mark_line(point=True).encode(
            x=_batch_x(), y=alt.Y("host_launches_per_step:Q",
                                  title=title("host_launches_per_step")),
            color=_mode_color(), tooltip=tips,
        ).properties(width=WIDTH // 2 + 40, height=HEIGHT - 40, title="Launches per step"))
    if not charts:
        return None
    return alt.hconcat(*charts).properties(title="Where the time goes")


def compare_chart(speedups: pd.DataFrame) -> alt.FacetChart | None:
    """Several runs' speedup curves, coloured by GPU and torch version, one panel per mode.
    `speedups` is analysis.compare_speedups' frame (columns run, series)."""
    df = speedups[speedups["mode"] != "eager"] if not speedups.empty else speedups
    if df.empty:
        return None
    df = df[["run", "series", "mode", "batch_size", "speedup", "step_ms", "eager_ms"]]
    modes = [m for m in MODES if m in set(df["mode"])]
    return alt.Chart(df).mark_line(point=True).encode(
        x=_batch_x(), y=alt.Y("speedup:Q", title=title("speedup")),
        # An explicit categorical scheme: the host app's theme would otherwise pick shades
        # of one hue, and GPUs must be told apart at a glance.
        color=alt.Color("series:N", title="GPU · torch", scale=alt.Scale(scheme="category10"),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=400)),
        detail="run:N",
        tooltip=[alt.Tooltip("run:N", title="Run"), _mode_tip(), _batch_tip(),
                 _tip("speedup"), _tip("step_ms"), _tip("eager_ms")],
    ).properties(width=240, height=240).facet(
        column=alt.Column("mode:N", title=None, sort=modes)
    ).properties(title="Speedup over eager by mode")


def run_charts(points: pd.DataFrame) -> dict[str, alt.TopLevelMixin]:
    """A run page's charts in reading order, keyed by a short name (file names in exports);
    charts with nothing to draw are left out."""
    charts = {
        "speedup": speedup_chart(analysis.speedups(points)),
        "step-time": step_time_chart(points),
        "memory": memory_chart(points),
        "time-split": time_split_chart(analysis.time_split(points)),
    }
    return {k: v for k, v in charts.items() if v is not None}
