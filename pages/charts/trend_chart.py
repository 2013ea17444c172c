"""The Trends page's chart: a workload's speedup per mode over the ordered runs at one
batch size, each change against the previous run marked by its verdict. The table it
draws is pages/logic/trends.py's.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from pages.charts import encodings, layout
from runner.history.series import REFERENCE_US

# Up to this many runs a trend chart reads in half the page (each run's three-line label
# needs about 100 px with its spacing, and Vega hides labels that would touch); more get
# the whole width.
RUNS_PER_HALF_ROW = 3
# One shape per change verdict (contract/verdict.py's, and "first"): only a change
# outside the noise gets a triangle; an inconclusive one is no change to mark.
CHANGE_SHAPES = {"first": "circle", "within noise": "circle", "inconclusive": "circle",
                 "no interval": "circle", "faster": "triangle-up", "slower": "triangle-down"}


def _present(values, order) -> list[str]:
    have = {str(v) for v in values}
    return [v for v in order if v in have]


def trend_chart(table: pd.DataFrame, batch: int) -> alt.LayerChart | None:
    """Speedup per mode over the ordered runs at one batch size: log y with a 1x rule,
    95% intervals as bars, changes outside the noise as up / down triangles. Legends list
    only the modes and kinds of change drawn."""
    df = table[table["batch_size"] == batch]
    if df.empty:
        return None
    df = df.drop(columns=["change vs previous"]).assign(
        changed=df["change"].isin(["faster", "slower"]))
    values = list(df["speedup"]) + list(df["speedup_ci_low"].dropna()) \
        + list(df["speedup_ci_high"].dropna()) + [1.0]
    y = encodings.log_y("speedup", values)
    order = list(df.sort_values("order")["run"].drop_duplicates())
    # Horizontal labels on three lines (torch / date / id): rotated ones took a third of
    # the chart's height and still overlapped.
    x = alt.X("run:N", title="Run (torch version · date · id)", sort=order,
              axis=alt.Axis(labelAngle=0, labelExpr="split(datum.label, ' · ')",
                            labelLimit=layout.LABEL_LIMIT, labelOverlap=True))
    color = encodings.mode_color(df["mode"])
    tips = [alt.Tooltip("run:N"), alt.Tooltip("mode:N"),
            alt.Tooltip("speedup:Q", format=".2f"),
            alt.Tooltip("speedup_ci_low:Q", title="95% low", format=".2f"),
            alt.Tooltip("speedup_ci_high:Q", title="95% high", format=".2f"),
            alt.Tooltip("change:N")]
    base = alt.Chart(df)
    line = base.mark_line(opacity=0.5).encode(x=x, y=y, color=color, detail="mode:N")
    kinds = _present(df["change"], CHANGE_SHAPES)
    shape = alt.Shape("change:N", title="Change vs previous",
                      scale=alt.Scale(domain=kinds, range=[CHANGE_SHAPES[k] for k in kinds]),
                      legend=layout.legend("bottom", entries=len(kinds)))
    pts = base.mark_point(filled=True).encode(
        x=x, y=y, color=color, shape=shape, tooltip=tips,
        size=alt.condition("datum.changed", alt.value(160), alt.value(60)))
    # A low with no bound (trends.OPEN_BELOW) runs to the plot's bottom; clipped, no bar
    # leaves the plot.
    floor = encodings.log_ticks(values)[0]
    bars = base.transform_filter("isValid(datum.speedup_ci_high)").transform_calculate(
        bar_low=f"isValid(datum.speedup_ci_low) && datum.speedup_ci_low > 0 "
                f"? datum.speedup_ci_low : {floor}"
    ).mark_rule(clip=True).encode(
        x=x, y=alt.Y("bar_low:Q"), y2="speedup_ci_high:Q", color=color)
    rule = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(
        y="y:Q")
    runs = df["run_id"].nunique()
    return layout.fitted(rule + bars + line + pts, layout.chart_title(
        f"Speedup over eager at batch {batch}",
        f"{runs} run(s); bars: 95% interval (cut at the plot's edge); triangles: a change "
        "outside the noise"))


# A row a run in the single-runs chart: its label on one line beside it. Eight runs' three-
# line labels under a shared x axis did not fit 1280 px: Vega hid every other one.
ROW_PX = 30


def single_runs_chart(frame: pd.DataFrame) -> alt.LayerChart | None:
    """Each run's key figure as one point (trends.single_runs' frame) when no series has
    a second run to draw a line to: a row a run, log x with a 1x rule, the 95% interval
    as a bar."""
    if frame.empty:
        return None
    values = list(frame["speedup"]) + list(frame["speedup_ci_low"].dropna()) \
        + list(frame["speedup_ci_high"].dropna()) + [1.0]
    ticks = encodings.log_ticks(values)
    x = alt.X("speedup:Q", title="Key figure: speedup over eager (x)",
              scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False),
              axis=alt.Axis(values=ticks, format="~g"))
    y = alt.Y("run:N", title=None, sort=list(frame["run"]),
              axis=alt.Axis(labelLimit=layout.LABEL_LIMIT))
    color = encodings.mode_color(frame["mode"])
    tips = [alt.Tooltip("run:N"), alt.Tooltip("figure:N", title="key figure")]
    base = alt.Chart(frame)
    pts = base.mark_point(filled=True, size=80).encode(x=x, y=y, color=color, tooltip=tips)
    bars = base.transform_filter("isValid(datum.speedup_ci_low)").mark_rule().encode(
        x=alt.X("speedup_ci_low:Q"), x2="speedup_ci_high:Q", y=y, color=color)
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(
        x="x:Q")
    return layout.fitted(rule + bars + pts, layout.chart_title(
        "Each run's key figure: one run a point",
        f"{len(frame)} run(s), each alone in its series; bars: 95% interval"),
        height=max(layout.HEIGHT, ROW_PX * len(frame)))


# One shape per change-point verdict (runner/history/changes.py), on the run after the
# step: up for a longer step, down for a shorter one.
STEP_SHAPES = {"no change point": "circle", "regression": "triangle-up",
               "improvement": "triangle-down", "inconclusive": "diamond"}


def _step_ticks(df: pd.DataFrame) -> list[float]:
    """The step axis's ticks: the step times and the intervals within a decade of them. A
    wider interval (a noisy host's 0.02-50 ms) is cut at the plot's edge (the bars are
    clipped) rather than squeezing every step into a sliver; its figures are in the
    tooltip."""
    steps = df["value"].dropna()
    near = [v for v in [*df["low"].dropna(), *df["high"].dropna()]
            if steps.empty or steps.min() / 10 <= v <= steps.max() * 10]
    return encodings.log_ticks(list(steps) + near)


def step_chart(figures: pd.DataFrame, changes: pd.DataFrame, batch: int
               ) -> alt.LayerChart | None:
    """Each mode's judged step (ms, log y) over the ordered runs at one batch size, with
    its 95% interval, the runs after a change point marked by the change's verdict and a
    dashed rule at each regression or improvement. `figures` and `changes` are
    trend_changes.trend_changes' frames."""
    df = figures[figures["batch_size"] == batch]
    if df.empty:
        return None
    here = changes[changes["batch_size"] == batch]
    verdicts = {(m, int(r)): v for m, r, v in
                zip(here["mode"], here["after_run"], here["verdict"], strict=True)}
    df = df.assign(change=[verdicts.get((m, int(r)), "no change point")
                           for m, r in zip(df["mode"], df["run_id"], strict=True)])
    df = df.assign(marked=df["change"] != "no change point")
    ticks = _step_ticks(df)
    y = alt.Y("value:Q", title="Step (ms)",
              scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False),
              axis=alt.Axis(values=ticks, format="~g"))
    order = list(df.sort_values("order")["run"].drop_duplicates())
    x = alt.X("run:N", title="Run (torch version · date · id)", sort=order,
              axis=alt.Axis(labelAngle=0, labelExpr="split(datum.label, ' · ')",
                            labelLimit=layout.LABEL_LIMIT, labelOverlap=True))
    color = encodings.mode_color(df["mode"])
    kinds = _present(df["change"], STEP_SHAPES)
    shape = alt.Shape("change:N", title="Change point",
                      scale=alt.Scale(domain=kinds, range=[STEP_SHAPES[k] for k in kinds]),
                      legend=layout.legend("bottom", entries=len(kinds)))
    tips = [alt.Tooltip("run:N"), alt.Tooltip("mode:N"),
            alt.Tooltip("value:Q", title="step ms", format=".4g"),
            alt.Tooltip("low:Q", title="95% low", format=".4g"),
            alt.Tooltip("high:Q", title="95% high", format=".4g"),
            alt.Tooltip("basis:N", title="judged on"), alt.Tooltip("change:N")]
    base = alt.Chart(df)
    line = base.mark_line(opacity=0.5).encode(x=x, y=y, color=color, detail="mode:N")
    bars, carets = _clipped_bars(base, x, color, ticks, tips)
    pts = base.mark_point(filled=True).encode(
        x=x, y=y, color=color, shape=shape, tooltip=tips,
        size=alt.condition("datum.marked", alt.value(180), alt.value(50)))
    layers = [bars, carets, line, pts]
    found = df[df["change"].isin(["regression", "improvement"])]
    if not found.empty:
        layers.insert(0, alt.Chart(found[["run"]].drop_duplicates()).mark_rule(
            strokeDash=[4, 4], color="#888").encode(x=x))
    normalised = df["basis"].str.startswith("host").any()
    return layout.fitted(alt.layer(*layers), layout.chart_title(
        f"Step time at batch {batch}",
        (f"host-bound points at {REFERENCE_US:g} us a launch; " if normalised else "")
        + "bars: 95% interval (a caret: it runs on past the axis); triangles: change "
          "points"))


# How far inside the plot a cut interval ends (a share of the log axis, about 10 px of a
# 250 px plot): its caret sits there, whole, rather than on the axis's edge.
CUT_INSET = 0.04


def _clipped_bars(base: alt.Chart, x: alt.X, color, ticks: list[float], tips: list
                  ) -> tuple[alt.Chart, alt.LayerChart]:
    """Each point's 95% interval as a rule cut to the axis (a noisy host's 0.02-50 ms
    interval would squash every median into a sliver; a low of 0, clamped by the runner:
    trends.OPEN_BELOW, has no place on a log scale), and a caret where it was cut,
    pointing the way it goes on; the tooltip gives the whole interval. The rule ends
    CUT_INSET inside the plot, so neither it nor its caret lies on the edge."""
    inset = (ticks[-1] / ticks[0]) ** CUT_INSET
    lo, hi = ticks[0] * inset, ticks[-1] / inset
    bars = base.transform_filter("isValid(datum.high)").transform_calculate(
        bar_low=f"isValid(datum.low) && datum.low > {lo} ? datum.low : {lo}",
        bar_high=f"min(datum.high, {hi})",
    ).mark_rule().encode(x=x, y=alt.Y("bar_low:Q"), y2="bar_high:Q", color=color)
    cut = base.transform_filter("isValid(datum.high)").transform_calculate(
        below=f"!isValid(datum.low) || datum.low < {lo}", above=f"datum.high > {hi}")
    down = cut.transform_filter("datum.below").transform_calculate(at=f"{lo}").mark_point(
        shape="triangle-down", filled=True, size=40)
    up = cut.transform_filter("datum.above").transform_calculate(at=f"{hi}").mark_point(
        shape="triangle-up", filled=True, size=40)
    enc = {"x": x, "y": alt.Y("at:Q"), "color": color, "tooltip": tips}
    return bars, alt.LayerChart(layer=[down.encode(**enc), up.encode(**enc)])
