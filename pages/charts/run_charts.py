"""Altair charts of a run and of a comparison. Each function takes records (a run's
`Measurement`s, the speedups and memory figures contract/ computes over them) and gives
back a chart, or None when there is nothing to draw (a CPU run has no memory figures; a
failed run has no ok point). Each chart turns its records into the one frame it draws,
here at its edge (issue 45): the rules are never computed over that frame.

The same basics on every chart (encodings.py): one colour per mode (MODE_COLORS, the Serve
page's too);
speedup on a log axis with a 1x rule, so a slowdown is not squashed under 1; log time axes
with 1-2-5 ticks; a series of fewer than MIN_LINE_POINTS points drawn as points, never a
line joining batch sizes decades apart; single (layered) charts only, so the page can
stretch each to its width (a facet or concat keeps fixed panel widths).

Axis titles and tooltip formats come from pages.logic.metrics, so units live in one place.
Batch sizes are powers of two in practice: a log2 x axis spaces them evenly.

Speedup and step-time charts draw each point's 95% interval as error bars where the run
measured one (bundle version 3); points without one get no bar, never an invented one.

Layout is set here, not by the page: every chart's plot area is `height` tall whatever its
legends and titles take (autosize fit-x: the page stretches the width, the height is the
plot's), legends list only the modes the data has and wrap into columns that fit a half-page
column, titles are short (the detail goes into a subtitle) and start at the left edge, so
nothing is cut at the chart's edge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import altair as alt
import pandas as pd

from contract import memory
from contract.measurement import Measurement
from contract.metrics import BYTES_PER_MIB
from contract.speedups import Speedup, speedups, usable
from contract.vocab import MODE_TABLE
from pages.charts import split_charts, workload_charts
from pages.charts.encodings import (
    MIN_LINE_POINTS,
    batch_band_x,
    batch_tip,
    batch_x,
    error_bars,
    lines_and_points,
    log_y,
    mode_color,
    mode_tip,
    one_x_rule,
    open_below_text,
    padded,
    tip,
)
from pages.charts.layout import (  # noqa: F401 - WIDTH: the report's width, here too
    HEIGHT,
    LABEL_LIMIT,
    WIDTH,
    chart_title,
    fitted,
    legend,
    present_modes,
    unfitted,
)
from pages.logic import cost, energy, run_text
from pages.logic.comparing import RunSpeedups
from pages.logic.metrics import title

SPEEDUP_TIPS = ("speedup", "speedup_ci_low", "speedup_ci_high", "step_ms", "eager_ms")


def _speedup_values(df: pd.DataFrame) -> list:
    return [1.0, *df["speedup"], *df["speedup_ci_low"], *df["speedup_ci_high"]]


def speedup_rows(found: Sequence[Speedup]) -> list[dict]:
    """The speedups (other than eager's) as a speedup chart's rows."""
    return [{"mode": s.mode, "batch_size": s.batch_size, "speedup": s.speedup,
             "speedup_ci_low": s.ci_low, "speedup_ci_high": s.ci_high,
             "step_ms": s.step_ms, "eager_ms": s.eager_ms}
            for s in found if s.mode != "eager"]


def _frame(rows: list[dict], columns: Sequence[str]) -> pd.DataFrame:
    """A chart's one frame, from its rows (records' figures; None is Vega's null)."""
    return pd.DataFrame(rows, columns=list(columns))


def speedup_chart(found: Sequence[Speedup]) -> alt.LayerChart | None:
    """Speedup over eager against batch size, one line per mode, on a log axis with the
    1x rule (eager), with each point's 95% interval as an error bar."""
    rows = speedup_rows(found)
    if not rows:
        return None
    df = _frame(rows, ["mode", "batch_size", *SPEEDUP_TIPS])
    y = log_y("speedup", _speedup_values(df))
    color = mode_color(df["mode"], orient="bottom")
    layers = lines_and_points(batch_x(df["batch_size"]), y, color,
                               [mode_tip(), batch_tip(), *(tip(n) for n in SPEEDUP_TIPS)],
                               by=["mode"])
    bars = error_bars(df, "speedup_ci_low", "speedup_ci_high",
                       log_y("speedup_ci_low", _speedup_values(df), "speedup"), color)
    chart = alt.layer(*layers, *([bars] if bars is not None else []), one_x_rule(), data=df)
    # Named as drawn: a run without intervals (published figures) has no bar to explain.
    what = ("95% interval" if bars is not None else "no interval measured") + \
        open_below_text(df, "speedup_ci_low", "speedup_ci_high")
    return fitted(chart, chart_title("Speedup over eager", f"{what}; dashed line: 1x = eager"))


def step_time_chart(points: Sequence[Measurement]) -> alt.LayerChart | None:
    """Median step time against batch size, log-log with 1-2-5 ticks and a mode legend,
    each point's 95% interval as error bars; points without one (older runs) get their
    p10-p90 band instead."""
    ok = usable(points)
    if not ok:
        return None
    cols = ["step_ms", "step_ms_ci_low", "step_ms_ci_high", "step_ms_p10", "step_ms_p90"]
    df = _frame([{"mode": m.mode, "batch_size": m.batch_size,
                  **{c: m.value(c) for c in cols}} for m in ok], ["mode", "batch_size", *cols])
    values = df[cols].to_numpy().ravel()
    y = log_y("step_ms", values)
    color = mode_color(df["mode"], orient="bottom")
    x = batch_x(df["batch_size"])
    layers = lines_and_points(x, y, color, [mode_tip(), batch_tip(), *(tip(c) for c in cols)],
                               by=["mode"])
    no_ci = df[df["step_ms_ci_low"].isna() | df["step_ms_ci_high"].isna()]
    banded = no_ci.dropna(subset=["step_ms_p10", "step_ms_p90"])
    if not banded.empty:
        band = alt.Chart(banded).mark_area(opacity=0.2).encode(
            x=x, y=log_y("step_ms_p10", values, "step_ms"),
            y2="step_ms_p90:Q", color=color)
        layers.insert(0, band)
    bars = error_bars(df, "step_ms_ci_low", "step_ms_ci_high",
                       log_y("step_ms_ci_low", values, "step_ms"), color, x=x)
    if bars is not None:
        layers.append(bars)
    what = ("no interval or band given" if bars is None and banded.empty else
            "95% interval" if banded.empty else "p10-p90 band, no interval"
            if bars is None else "95% interval (p10-p90 band where none)")
    # The statistic the figures are (a published article's means are not medians).
    stat = run_text.step_statistic(ok)
    what += open_below_text(df, "step_ms_ci_low", "step_ms_ci_high")
    return fitted(alt.layer(*layers, data=df), chart_title("Step time", f"{stat}, {what}"))


def _mib(v: float | None) -> float | None:
    return None if v is None else v / BYTES_PER_MIB


def _kept_rows(costs: Sequence[cost.Cost]) -> list[dict]:
    """The Memory view's bars: what each mode keeps, by part (MiB); before the isolated
    pass, the graph pool alone."""
    rows = []
    for c in costs:
        m = c.memory
        cost_mib = _mib(m.cost_bytes)
        parts = ((("pool", m.pool_bytes),) if m.old else
                 (("pool", m.pool_bytes), ("default", m.default_bytes)))
        for part, v in parts:
            if v is not None and not (m.old and not memory.captures_graph(m.mode)):
                rows.append({"mode": m.mode, "batch_size": m.batch_size,
                             "part": cost.PARTS[part], "MiB": _mib(v),
                             "kept_mib": _mib(m.kept_bytes), "cost_mib": cost_mib})
    return rows


def memory_chart(costs: Sequence[cost.Cost]) -> alt.Chart | None:
    """What each mode keeps on the GPU at each batch size (MiB), its graph pool and its
    default pool stacked, one bar per mode beside each other, eager's the baseline: a
    mode's memory cost over eager is its bar less eager's (contract/memory.py). A run
    from before the isolated memory pass shows its graph pools alone, and says so."""
    rows = _kept_rows(costs)
    if not rows:
        return None
    long = _frame(rows, ["mode", "batch_size", "part", "MiB", "kept_mib", "cost_mib"])
    modes = present_modes(long["mode"])
    old = cost.old_method(costs)
    parts = [cost.PARTS["pool"]] if old else list(cost.PARTS.values())
    # Two legends on top sit side by side and ran past a half-page chart: the parts' legend
    # goes under the plot.
    chart = alt.Chart(long).mark_bar().encode(
        x=batch_band_x(long["batch_size"]),
        xOffset=alt.XOffset("mode:N", sort=modes),
        y=alt.Y("MiB:Q", title="Graph pool (MiB)" if old else "Kept on the GPU (MiB)",
                stack="zero"),
        color=mode_color(modes),
        opacity=alt.Opacity("part:N", title="Part", sort=parts,
                            scale=alt.Scale(domain=parts, range=[1.0, 0.45][:len(parts)]),
                            legend=legend("bottom", entries=len(parts))),
        order=alt.Order("part:N", sort="descending"),  # the graph pool at the bottom
        tooltip=[mode_tip(), batch_tip(), alt.Tooltip("part:N", title="Part"),
                 alt.Tooltip("MiB:Q", title="MiB", format=",.1f"),
                 alt.Tooltip("kept_mib:Q", title="Kept, MiB", format=",.1f"),
                 alt.Tooltip("cost_mib:Q", title="Memory cost over eager, MiB",
                             format="+,.1f")],
    )
    if old:
        return fitted(chart, chart_title("Graph pool", memory.OLD_METHOD))
    return fitted(chart, chart_title(
        "What each mode keeps", "solid: graph pool, light: default pool; cost = bar - eager"))


def tradeoff_chart(costs: Sequence[cost.Cost]) -> alt.LayerChart | None:
    """What the memory buys: speedup over eager (log, 1x rule) against the memory cost
    over eager at the same batch size; one point per (mode, batch), labelled with the
    batch; the Pareto-best modes of each batch (nothing faster for less) filled and large.
    None for a run from before the isolated memory pass: it has no cost to plot."""
    rows = [{"mode": c.mode, "batch_size": c.batch_size,
             "cost_mib": _mib(c.memory.cost_bytes), "kept_mib": _mib(c.memory.kept_bytes),
             "speedup": c.speedup.speedup, "speedup_ci_low": c.speedup.ci_low,
             "speedup_ci_high": c.speedup.ci_high, "pareto": c.pareto}
            for c in costs if c.speedup is not None and c.memory.cost_bytes is not None
            and c.mode != "eager"]
    if not rows:
        return None
    df = _frame(rows, ["mode", "batch_size", "cost_mib", "kept_mib", "speedup",
                       "speedup_ci_low", "speedup_ci_high", "pareto"])
    df = df.assign(
        best=df["pareto"].map({True: "Pareto-best at its batch", False: "dominated"}))
    # One label per mode (its fastest Pareto-best point): labelling every point overlaps.
    top = df[df["pareto"]].groupby("mode")["speedup"].idxmax()
    df["label"] = ""
    df.loc[top.values, "label"] = [f"{m} @ batch {int(b)}" for m, b in
                                   zip(df.loc[top.values, "mode"],
                                       df.loc[top.values, "batch_size"], strict=True)]
    x = alt.X("cost_mib:Q", title="Memory cost over eager (MiB)", scale=padded())
    y = log_y("speedup", _speedup_values(df))
    tips = [mode_tip(), batch_tip(), alt.Tooltip("cost_mib:Q", title="Memory cost, MiB",
                                                   format="+,.1f"),
            alt.Tooltip("kept_mib:Q", title="Kept, MiB", format=",.1f"),
            *(tip(n) for n in ("speedup", "speedup_ci_low", "speedup_ci_high")),
            alt.Tooltip("best:N", title="Pareto")]
    color = mode_color(df["mode"])
    marks = alt.Chart().mark_point(filled=True).encode(
        x=x, y=y, color=color,
        shape=alt.Shape("best:N", title=None, sort=["Pareto-best at its batch", "dominated"],
                        scale=alt.Scale(range=["diamond", "circle"]),
                        legend=legend("bottom", entries=2)),
        size=alt.Size("best:N", scale=alt.Scale(domain=["Pareto-best at its batch",
                                                        "dominated"], range=[160, 30]),
                      legend=None),
        opacity=alt.condition("datum.pareto", alt.value(1.0), alt.value(0.45)),
        tooltip=tips)
    # Labels read away from the nearer side (one right of the rightmost point ran past the
    # edge); those reading left wholly above their point, the others wholly below: at its
    # point's height a label ran into a neighbour (H200 hf decode, 36 and 56 MiB, 14x).
    mid = float(df["cost_mib"].min() + df["cost_mib"].max()) / 2
    clear = 9  # px from the point to a label's edge: a 160 px² diamond reaches ~6.5 px
    labels = [alt.Chart().mark_text(
        align=side, dx=7 if side == "left" else -7, fontSize=10, dy=clear * (
            -1 if side == "left" else 1), baseline="bottom" if side == "left" else "top").encode(
        x=x, y=y, color=color, text="label:N").transform_filter(
        f"datum.label && (datum.cost_mib {'<=' if side == 'left' else '>'} {mid!r})")
        for side in ("left", "right")]
    return fitted(alt.layer(marks, *labels, one_x_rule(), data=df),
                  chart_title("Speedup against memory cost", "up and left is better"))


# One mark per mode on Compare (the colour is the run's): filled shapes told apart at a
# glance, and a dash per mode for the lines between them; each mode's entry of the mode
# table (contract/vocab.py) holds them.
MODE_SHAPES = {m.name: m.shape for m in MODE_TABLE.values()}
MODE_DASHES = {m.name: list(m.dash) for m in MODE_TABLE.values()}


def compare_chart(runs: Sequence[RunSpeedups]) -> alt.LayerChart | None:
    """Several runs' speedup curves in one chart, read as one comparison: one colour per
    run (GPU and torch version), one mark and dash per graph mode, log speedup axis with
    the 1x rule, each point's 95% interval where measured; a run's series of fewer than
    MIN_LINE_POINTS points (published figures) drawn as points. None when nothing to
    draw."""
    rows = [{"run": r.run, "series": r.series, **row} for r in runs
            for row in speedup_rows(r.speedups)]
    if not rows:
        return None
    df = _frame(rows, ["run", "series", "mode", "batch_size", *SPEEDUP_TIPS])
    # An explicit categorical scheme: the host app's theme would otherwise pick shades
    # of one hue, and GPUs must be told apart at a glance.
    series = sorted(set(df["series"]))
    color = alt.Color("series:N", title="Run: GPU · torch",
                      scale=alt.Scale(scheme="category10", domain=series),
                      legend=alt.Legend(orient="bottom", direction="vertical",
                                        labelLimit=LABEL_LIMIT))
    modes = present_modes(df["mode"])
    # The marks' legend in a neutral grey (colour is the run's). The dashes read the mode
    # from a copy of the column: on the same field Vega-Lite merges the two legends, and
    # drew the dash over each shape.
    df = df.assign(line_mode=df["mode"])
    shape = alt.Shape("mode:N", title="Mode", sort=modes,
                      legend=legend("bottom", entries=1, direction="vertical",
                                    symbolFillColor="#666", symbolStrokeColor="#666"),
                      scale=alt.Scale(domain=modes, range=[MODE_SHAPES[m] for m in modes]))
    dash = alt.StrokeDash("line_mode:N", sort=modes, legend=None,
                          scale=alt.Scale(domain=modes, range=[MODE_DASHES[m] for m in modes]))
    y = log_y("speedup", _speedup_values(df))
    tips = [alt.Tooltip("run:N", title="Run"), mode_tip(), batch_tip(),
            *(tip(n) for n in SPEEDUP_TIPS)]
    n = "_series_points"
    x = batch_x(df["batch_size"])
    line = (alt.Chart().mark_line(opacity=0.8).encode(
        x=x, y=y, color=color, strokeDash=dash, detail="run:N")
        .transform_joinaggregate(**{n: "count()"}, groupby=["run", "mode"])
        .transform_filter(f"datum.{n} >= {MIN_LINE_POINTS}"))
    points = alt.Chart().mark_point(filled=True, size=70, opacity=0.9).encode(
        x=x, y=y, color=color, shape=shape, tooltip=tips)
    bars = error_bars(df, "speedup_ci_low", "speedup_ci_high",
                       log_y("speedup_ci_low", _speedup_values(df), "speedup"), color,
                       x=x, detail="mode:N")
    chart = alt.layer(line, points, *([bars] if bars is not None else []), one_x_rule(),
                      data=df)
    return fitted(chart, chart_title("Speedup over eager, per run and mode",
                                     "colour: run · mark: mode · bars: 95% interval · "
                                     "dashed line: 1x = eager" + open_below_text(
                                         df, "speedup_ci_low", "speedup_ci_high")),
                  height=HEIGHT + 20)


# Energy per step (issue 28) is drawn as step time is (log-log, 95% bars): at small batch it
# follows step time. Energy above idle may be negative (a mode drawing about idle power,
# within the counter's error), so that chart has a linear axis and a rule at 0.
ENERGY_TIPS = ("energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
               "energy_above_idle_mj_per_step", "avg_power_w", "idle_power_w")


def energy_chart(points: Sequence[Measurement], above_idle: bool = False
                 ) -> alt.LayerChart | None:
    """Energy per step (mJ) against batch size, per mode, each point's 95% interval as an
    error bar; `above_idle`: the energy above the device's idle draw instead (linear axis,
    no interval). None when no point has the figure."""
    field = "energy_above_idle_mj_per_step" if above_idle else "energy_mj_per_step"
    drawn = energy.energy_points(points)
    # Inside the counter's error an energy above idle is not a number to draw (the
    # caption says so); a gain is quoted by the one rule, "inconclusive" included.
    rows = [{"mode": m.mode, "batch_size": m.batch_size,
             **{c: m.value(c) for c in ENERGY_TIPS}, "gain_text": energy.gain_text(m)}
            for m in drawn
            if m.value(field) is not None and not (above_idle and energy.within_error(m))]
    if not rows:
        return None
    df = _frame(rows, ["mode", "batch_size", *ENERGY_TIPS, "gain_text"])
    # Both energy charts on the batch sizes that have an energy figure: the points left
    # out above idle must not move its axis away from the chart beside it.
    x = batch_x([m.batch_size for m in drawn])
    color = mode_color(df["mode"], orient="bottom")
    tips = [mode_tip(), batch_tip(), *(tip(c, ".3f") for c in (
        "energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
        "energy_above_idle_mj_per_step")), tip("avg_power_w", ".1f"),
        tip("idle_power_w", ".1f"), alt.Tooltip("gain_text:N", title="Energy gain over eager")]
    if above_idle:
        y = alt.Y(f"{field}:Q", title=title(field), axis=alt.Axis(labelFlush=False),
                  scale=padded())  # padded: a top marker sat half outside the plot
        layers = lines_and_points(x, y, color, tips, by=["mode"])
        zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(
            strokeDash=[4, 4], color="#444").encode(y="y:Q")
        return fitted(alt.layer(*layers, zero, data=df), chart_title(
            "Energy per step above idle",
            "within the counter's error: not drawn; dashed line: idle"))
    cols = ["energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high"]
    values = df[cols].to_numpy().ravel()
    layers = lines_and_points(x, log_y(field, values), color, tips, by=["mode"])
    bars = error_bars(df, cols[1], cols[2], log_y(cols[1], values, field), color, x=x)
    return fitted(alt.layer(*layers, *([bars] if bars is not None else []), data=df),
                  chart_title("Energy per step", "mean power x timed step, 95% interval"))


@dataclass
class _Run:
    """A run's points and what its charts share, each computed once: the memory figures
    (Pareto included) feed two charts."""
    points: Sequence[Measurement]
    _costs: list[cost.Cost] | None = None

    @property
    def costs(self) -> list[cost.Cost]:
        if self._costs is None:
            self._costs = cost.costs(self.points)
        return self._costs


RUN_CHARTS: dict[str, Callable[[_Run], alt.TopLevelMixin | None]] = {
    "speedup": lambda d: speedup_chart(speedups(d.points)),
    "step-time": lambda d: step_time_chart(d.points),
    "memory": lambda d: memory_chart(d.costs),
    "memory-tradeoff": lambda d: tradeoff_chart(d.costs),
    "time-split": lambda d: split_charts.time_split_chart(d.points),
    "energy": lambda d: energy_chart(d.points),
    "energy-above-idle": lambda d: energy_chart(d.points, above_idle=True),
    "per-kernel": lambda d: workload_charts.per_kernel_chart(d.points),
}


def run_charts(points: Sequence[Measurement], names: Sequence[str] = tuple(RUN_CHARTS)
               ) -> dict[str, alt.TopLevelMixin]:
    """A run's charts in reading order, keyed by a short name (file names in exports);
    charts with nothing to draw are left out. `names` picks some: building an Altair
    chart is a large part of a page's render time, so a page builds only what it draws."""
    run = _Run(points)
    charts = {k: RUN_CHARTS[k](run) for k in RUN_CHARTS if k in names}
    return {k: v for k, v in charts.items() if v is not None}
