"""Altair charts of a run and of a comparison. Each function takes the frames that
pages.common.analysis returns and gives back a chart, or None when there is nothing to draw
(a CPU run has no memory figures; a failed run has no ok point at all).

Axis titles and tooltip formats come from pages.common.metrics, so units live in one place.
Batch sizes are powers of two in practice: a log2 x axis spaces them evenly.

Speedup and step-time charts draw each point's 95% interval as error bars where the run
measured one (bundle version 3); points without one get no bar, never an invented one.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from pages.common import analysis
from pages.common.metrics import metric, title
from runner.format.vocab import MODE_TABLE, MODES

# One colour per mode everywhere (charts, report), so a reader learns it once.
WIDTH, HEIGHT = 520, 300


def _mode_color(legend: bool = True) -> alt.Color:
    return alt.Color("mode:N", title="Mode", sort=list(MODES),
                     scale=alt.Scale(domain=list(MODES),
                                     range=[MODE_TABLE[m].color for m in MODES]),
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


def _error_bars(df: pd.DataFrame, low: str, high: str, y: alt.Y, color: alt.Color,
                **encoding) -> alt.Chart | None:
    """The 95% interval of each point that has one, as a vertical bar with ticks, on the
    layer's shared data (a filter skips points without one); None when no point has one."""
    if not df[[low, high]].notna().all(axis=1).any():
        return None
    return alt.Chart().mark_errorbar(ticks=True).encode(
        x=_batch_x(), y=y, y2=f"{high}:Q", color=color, **encoding,
    ).transform_filter(f"isValid(datum['{low}']) && isValid(datum['{high}'])")


SPEEDUP_TIPS = ("speedup", "speedup_ci_low", "speedup_ci_high", "step_ms", "eager_ms")


def speedup_chart(speedups: pd.DataFrame) -> alt.LayerChart | None:
    """Speedup over eager against batch size, one line per mode (eager is the 1.0 line),
    with each point's 95% interval as an error bar."""
    if speedups.empty:
        return None
    df = speedups[["mode", "batch_size", *SPEEDUP_TIPS]]
    line = alt.Chart().mark_line(point=True).encode(
        x=_batch_x(),
        y=alt.Y("speedup:Q", title=title("speedup")),
        color=_mode_color(),
        tooltip=[_mode_tip(), _batch_tip(), *(_tip(n) for n in SPEEDUP_TIPS)])
    bars = _error_bars(df, "speedup_ci_low", "speedup_ci_high",
                       alt.Y("speedup_ci_low:Q", title=title("speedup")), _mode_color())
    chart = alt.layer(*(c for c in (line, bars) if c is not None), data=df)
    return chart.properties(width=WIDTH, height=HEIGHT,
                            title="Speedup over eager, with 95% interval (higher is better)")


def step_time_chart(points: pd.DataFrame) -> alt.LayerChart | None:
    """Median step time against batch size, log-log, with each point's 95% interval as
    error bars; points without one (older runs) get their p10-p90 band instead."""
    ok = analysis.usable(points)
    if ok.empty:
        return None
    cols = ["step_ms", "step_ms_ci_low", "step_ms_ci_high", "step_ms_p10", "step_ms_p90"]
    df = ok[["mode", "batch_size"]].assign(**{c: analysis._col(ok, c) for c in cols})
    y = alt.Y("step_ms:Q", title=title("step_ms"), scale=alt.Scale(type="log"))
    line = alt.Chart().mark_line(point=True).encode(
        x=_batch_x(), y=y, color=_mode_color(),
        tooltip=[_mode_tip(), _batch_tip(), *(_tip(c) for c in cols)])
    layers = [line]
    no_ci = df[df["step_ms_ci_low"].isna() | df["step_ms_ci_high"].isna()]
    banded = no_ci.dropna(subset=["step_ms_p10", "step_ms_p90"])
    if not banded.empty:
        band = alt.Chart(banded).mark_area(opacity=0.2).encode(
            x=_batch_x(), y=alt.Y("step_ms_p10:Q", title=title("step_ms"),
                                  scale=alt.Scale(type="log")),
            y2="step_ms_p90:Q", color=_mode_color())
        layers.insert(0, band)
    bars = _error_bars(df, "step_ms_ci_low", "step_ms_ci_high",
                       alt.Y("step_ms_ci_low:Q", title=title("step_ms"),
                             scale=alt.Scale(type="log")), _mode_color())
    if bars is not None:
        layers.append(bars)
    what = ("95% interval" if bars is not None and banded.empty else "p10-p90 band, no "
            "interval" if bars is None else "95% interval (p10-p90 band where none)")
    return alt.layer(*layers, data=df).properties(
        width=WIDTH, height=HEIGHT, title=f"Step time, median with {what} (lower is better)")


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


LAUNCH_VS_BUSY = ("step_ms", "gpu_busy_ms", "host_launch_ms")


def time_split_chart(split: pd.DataFrame) -> alt.HConcatChart | None:
    """Where the time goes: GPU busy fraction of the step (1.0 = no launch gaps left),
    host launches per step, per mode, and eager's host launch time (launches x the host's
    launch cost) beside its GPU busy time: when the first exceeds the second, the step is
    launch-bound, and that is what a CUDA graph removes."""
    if split.empty:
        return None
    tips = [_mode_tip(), _batch_tip(), _tip("step_ms"), _tip("gpu_busy_ms"), _tip("idle_ms"),
            _tip("busy_fraction", ".0%"), _tip("host_launches_per_step", ".1f"),
            _tip("graph_launches_per_step", ".1f"), _tip("gpu_kernels_per_step", ".1f"),
            _tip("launch_us", ".1f"), _tip("host_launch_ms")]
    size = {"width": WIDTH // 2 + 40, "height": HEIGHT - 40}
    charts = []
    busy = split.dropna(subset=["busy_fraction"])
    if not busy.empty:
        line = alt.Chart(busy).mark_line(point=True).encode(
            x=_batch_x(), y=alt.Y("busy_fraction:Q", title=title("busy_fraction"),
                                  axis=alt.Axis(format="%")),
            color=_mode_color(), tooltip=tips)
        rule = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(
            y="y:Q")
        charts.append(alt.layer(line, rule).properties(**size, title="GPU busy / step time"))
    launches = split.dropna(subset=["host_launches_per_step"])
    if not launches.empty:
        charts.append(alt.Chart(launches).mark_line(point=True).encode(
            x=_batch_x(), y=alt.Y("host_launches_per_step:Q",
                                  title=title("host_launches_per_step")),
            color=_mode_color(), tooltip=tips,
        ).properties(**size, title="Launches per step"))
    eager = split[(split["mode"] == "eager")].dropna(subset=["host_launch_ms"])
    if not eager.empty:
        long = eager.melt(id_vars=["batch_size"], value_vars=list(LAUNCH_VS_BUSY),
                          var_name="figure", value_name="ms").dropna(subset=["ms"])
        long["figure"] = long["figure"].map(lambda n: metric(n).label)
        charts.append(alt.Chart(long).mark_line(point=True).encode(
            x=_batch_x(), y=alt.Y("ms:Q", title="Time per step (ms)"),
            color=alt.Color("figure:N", title="Eager",
                            sort=[metric(n).label for n in LAUNCH_VS_BUSY],
                            legend=alt.Legend(orient="bottom")),
            strokeDash=alt.StrokeDash("figure:N", legend=None),
            tooltip=[_batch_tip(), alt.Tooltip("figure:N", title="What"),
                     alt.Tooltip("ms:Q", title="ms", format=".3f")],
        ).properties(**size, title="Eager: host launch time vs GPU busy time"))
    if not charts:
        return None
    return alt.hconcat(*charts).properties(title="Where the time goes").resolve_scale(
        color="independent", strokeDash="independent")


def compare_chart(speedups: pd.DataFrame) -> alt.FacetChart | None:
    """Several runs' speedup curves, coloured by GPU and torch version, one panel per mode.
    `speedups` is analysis.compare_speedups' frame (columns run, series)."""
    df = speedups[speedups["mode"] != "eager"] if not speedups.empty else speedups
    if df.empty:
        return None
    df = df[["run", "series", "mode", "batch_size", *SPEEDUP_TIPS]]
    modes = [m for m in MODES if m in set(df["mode"])]
    # An explicit categorical scheme: the host app's theme would otherwise pick shades
    # of one hue, and GPUs must be told apart at a glance.
    color = alt.Color("series:N", title="GPU · torch", scale=alt.Scale(scheme="category10"),
                      legend=alt.Legend(orient="bottom", columns=2, labelLimit=400))
    y = alt.Y("speedup:Q", title=title("speedup"))
    line = alt.Chart().mark_line(point=True).encode(
        x=_batch_x(), y=y, color=color, detail="run:N",
        tooltip=[alt.Tooltip("run:N", title="Run"), _mode_tip(), _batch_tip(),
                 *(_tip(n) for n in SPEEDUP_TIPS)])
    bars = _error_bars(df, "speedup_ci_low", "speedup_ci_high",
                       alt.Y("speedup_ci_low:Q", title=title("speedup")), color,
                       detail="run:N")
    layers = [line] if bars is None else [line, bars]
    return alt.layer(*layers, data=df).properties(width=240, height=240).facet(
        column=alt.Column("mode:N", title=None, sort=modes)
    ).properties(title="Speedup over eager by mode, with 95% interval")


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
