"""Host and GPU apart, drawn (the Run page's Time split view; issue 39): each mode's step
split into GPU busy, launch cost and the rest as shares of the step, batch by batch, and
eager's rounds against the round's launch cost with the projection line. The records come
from pages/logic/step_split.py (each chart's frame is made here); the rules from
contract/host_split.py.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import altair as alt
import pandas as pd

from contract import host_split
from contract.measurement import Measurement
from contract.speedups import usable
from contract.vocab import MODES
from pages.charts.encodings import (
    batch_tip,
    batch_x,
    lines_and_points,
    mode_color,
    mode_tip,
    padded,
    tip,
)
from pages.charts.layout import chart_title, fitted, legend, unfitted
from pages.logic import step_split
from pages.logic.metrics import metric, title

# Three parts told apart at a glance, GPU work in the GPU's green, the launches in the
# colour the timeline gives a kernel launch.
PART_COLORS = {"gpu": "#59a14f", "launch": "#4e79a7", "rest": "#bab0ac"}
# One dash a batch size for the projection lines (solid first), told apart in a legend.
DASHES = [[1, 0], [6, 3], [1, 3], [10, 3, 2, 3], [3, 6], [14, 4], [6, 2, 1, 2, 1, 2], [2, 8]]


def split_long(splits: Sequence[tuple[Measurement, host_split.StepSplit]]) -> pd.DataFrame:
    """The splits in long form for a stacked chart: one row per (point, part), the part
    named as host_split.PARTS names it."""
    rows = [{"mode": m.mode, "batch_size": m.batch_size, "part": host_split.PARTS[p],
             "ms": getattr(s, f"{p}_ms"), "share": s.share(p), "order": float(i)}
            for m, s in splits for i, p in enumerate(step_split.PART_NAMES)]
    return pd.DataFrame(rows, columns=["mode", "batch_size", "part", "ms", "share", "order"])


def split_share_chart(long: pd.DataFrame, mode: str) -> alt.Chart | None:
    """One mode's step split, a stacked bar a batch size: shares of the step (they add up
    to 100%), the parts' ms in the tooltip. None when the mode has no split."""
    df = long[long["mode"] == mode]
    if df.empty:
        return None
    names = [host_split.PARTS[p] for p in host_split.PARTS]
    color = alt.Color("part:N", title="Part of the step", sort=names,
                      scale=alt.Scale(domain=names,
                                      range=[PART_COLORS[p] for p in host_split.PARTS]),
                      legend=legend(entries=1, direction="vertical"))
    # The runs' log2 batch axis (a band axis drew no bars in the page's Vega-Lite).
    x = batch_x(long["batch_size"])  # every mode's chart on one batch domain
    bars = alt.Chart(df).mark_bar(size=14).encode(
        x=x,
        y=alt.Y("share:Q", title="Share of the step", stack="zero",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        color=color, order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("part:N", title="Part"), batch_tip(),
                 alt.Tooltip("ms:Q", title="ms a step", format=".3f"),
                 alt.Tooltip("share:Q", title="Share", format=".0%")])
    return fitted(alt.layer(bars), chart_title(f"{mode}: where the step goes",
                                     "GPU busy · launch cost · the rest of the host"))


def launch_scatter_chart(found: Sequence[step_split.Round],
                         projected: Sequence[tuple[int, float, float]],
                         mode: str = "eager") -> alt.LayerChart | None:
    """The mode's step in each round against that round's launch cost, a colour per
    process, a grey line per batch size: the step projected from the point's GPU busy and
    host time (host_split.projected_step). Log axes: launch costs and steps span decades
    across batch sizes. None without rounds that carry a launch cost."""
    if not found:
        return None
    rounds = pd.DataFrame([dataclasses.asdict(r) for r in found])
    rounds = rounds.assign(process=rounds["process"].map(lambda p: f"process {p}"))
    lines = pd.DataFrame(list(projected), columns=["batch_size", "launch_us", "step_ms"])
    procs = sorted(set(rounds["process"]))
    # Padded, so that a round at either end of a range is drawn whole.
    x = alt.X("launch_us:Q", title="Launch cost in the round (us a launch)",
              scale=alt.Scale(type="log", nice=False, zero=False, padding=10))
    y = alt.Y("step_ms:Q", title=f"{mode} step (ms)",
              scale=alt.Scale(type="log", nice=False, zero=False, padding=10))
    dots = alt.Chart(rounds).mark_point(filled=True, size=36, opacity=0.75).encode(
        x=x, y=y, color=alt.Color("process:N", title="Process", sort=procs,
                                  scale=alt.Scale(scheme="dark2"),
                                  legend=legend(entries=len(procs), labels=procs)),
        tooltip=[batch_tip(), alt.Tooltip("process:N", title="Process"),
                 alt.Tooltip("round:Q", title="Round"),
                 alt.Tooltip("launch_us:Q", title="Launch cost (us)", format=".1f"),
                 alt.Tooltip("step_ms:Q", title="Step (ms)", format=".3f")])
    layers: list[alt.Chart] = [dots]
    if not lines.empty:
        # Each line's batch size told by its dash, in a legend under the plot: a number
        # written at a line's end sat on the rounds' dots (issue 46).
        batches = sorted({int(b) for b in lines["batch_size"]})
        lines = lines.assign(batch=lines["batch_size"].map(lambda b: f"{int(b):,}"))
        names = [f"{b:,}" for b in batches]
        layers.insert(0, alt.Chart(lines).mark_line(color="#555").encode(
            x=x, y=y, strokeDash=alt.StrokeDash(
                "batch:N", title="Projected step at batch", sort=names,
                scale=alt.Scale(domain=names, range=DASHES[:len(names)]),
                legend=legend("bottom", entries=len(names), labels=names, symbolType="stroke",
                              symbolStrokeColor="#555", symbolSize=400)),
            tooltip=[batch_tip()]))
    # A short subtitle: fit-x narrows the plot until the title fits, so a long one left
    # the plot 80 px wide. The projection's rule is in the view's caption.
    return fitted(alt.layer(*layers), chart_title(
        f"{mode}: step against the round's launch cost",
        "dots: rounds · lines: projected step, by batch size"))


def host_split_charts(points: Sequence[Measurement]) -> dict[str, alt.TopLevelMixin]:
    """The Time split view's host-and-GPU charts in reading order: each mode's split
    ('split-<mode>'), then eager's rounds against their launch cost ('launch-scatter')."""
    long = split_long(step_split.splits(points))
    out: dict[str, alt.TopLevelMixin] = {}
    for mode in MODES:
        chart = split_share_chart(long, mode)
        if chart is not None:
            out[f"split-{mode}"] = chart
    rounds = step_split.launch_rounds(points)
    lines = step_split.projection_lines(points, rounds)
    # Without GPU busy time (a CPU run) there is no projection to hold the rounds to.
    scatter = launch_scatter_chart(rounds, lines) if lines else None
    if scatter is not None:
        out["launch-scatter"] = scatter
    return out


LAUNCH_VS_BUSY = ("step_ms", "gpu_busy_ms", "host_launch_ms")
SPLIT_TIPS = ("step_ms", "gpu_busy_ms", "idle_ms", "busy_fraction", "host_launches_per_step",
              "graph_launches_per_step", "gpu_kernels_per_step", "launch_us", "host_launch_ms")


def _split_tips() -> list:
    fmt = {"busy_fraction": ".0%", "launch_us": ".1f"}
    return [mode_tip(), batch_tip(),
            *(tip(n, fmt.get(n, ".1f" if "per_step" in n else None)) for n in SPLIT_TIPS)]


def time_split_frame(points: Sequence[Measurement]) -> pd.DataFrame:
    """Where the step time goes, per ok point: GPU busy (its kernels' time), idle (launch
    gaps: step - busy, never negative: busy can exceed the step by timing noise), the busy
    fraction (contract/host_split.py), and the host's launch time a step."""
    rows = []
    for m in usable(points):
        busy, step = m.launches.gpu_busy_ms, float(m.timing.step_ms or 0)
        rows.append({"mode": m.mode, "batch_size": m.batch_size, "step_ms": step,
                     "gpu_busy_ms": busy,
                     "idle_ms": None if busy is None else max(step - busy, 0.0),
                     "busy_fraction": host_split.busy_fraction(m),
                     **{n: m.value(n) for n in ("host_launches_per_step",
                                                "graph_launches_per_step",
                                                "gpu_kernels_per_step", "launch_us")},
                     "host_launch_ms": host_split.host_launch_ms(m)})
    return pd.DataFrame(rows, columns=["mode", "batch_size", *SPLIT_TIPS])


def _busy_chart(busy: pd.DataFrame, x: alt.X) -> alt.TopLevelMixin:
    """The GPU busy fraction of the step per mode, 0-100% with the 100% line on its tick:
    a fraction a little over 1 (busy time and step timed apart) widens the axis to it
    instead of lifting the line off its label."""
    top = max(1.0, float(busy["busy_fraction"].max()))
    ticks = [i / 5 for i in range(6)]
    # labelFlush off: vega nudged the 0% and 100% labels off their lines.
    y = alt.Y("busy_fraction:Q", title=title("busy_fraction"),
              scale=alt.Scale(domain=[0, top], nice=False, padding=6),
              axis=alt.Axis(format="%", values=ticks, labelFlush=False))
    rule = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(
        y="y:Q")
    layers = lines_and_points(x, y, mode_color(busy["mode"], orient="bottom"), _split_tips(),
                              by=["mode"])
    return fitted(alt.layer(*layers, rule, data=busy),
                  chart_title("GPU busy / step time", "dashed line: 100%, no launch gaps left"))


def _launches_chart(launches: pd.DataFrame, x: alt.X) -> alt.TopLevelMixin:
    """Host launches per step per mode on a symlog axis: eager's hundreds, reduce-
    overhead's one and cuda-graph's none each on its own line (on a linear axis 0 and 1
    lay on the zero line, read as below it)."""
    top = float(launches["host_launches_per_step"].max())
    ticks = [0.0, *(10.0 ** e for e in range(0, max(int(math.log10(max(top, 1))) + 2, 1)))]
    y = alt.Y("host_launches_per_step:Q", title=title("host_launches_per_step"),
              scale=alt.Scale(type="symlog", domain=[0, ticks[-1]], nice=False, padding=6),
              axis=alt.Axis(values=ticks, format=",d", labelFlush=False))
    layers = lines_and_points(x, y, mode_color(launches["mode"], orient="bottom"),
                              _split_tips(), by=["mode"])
    return fitted(alt.layer(*layers, data=launches),
                  chart_title("Launches per step", "host launches (0, 1, 10, ...: symlog axis)"))


def time_split_charts(points: Sequence[Measurement]) -> dict[str, alt.TopLevelMixin]:
    """Where the time goes, as separate charts (each stretches to its column): the GPU
    busy fraction of the step (100% = no launch gaps left), host launches per step, and
    eager's host launch time (launches x the host's launch cost) beside its GPU busy time:
    when the first exceeds the second, the step is launch-bound, and that is what a CUDA
    graph removes."""
    out: dict[str, alt.TopLevelMixin] = {}
    split = time_split_frame(points)
    if split.empty:
        return out
    x = batch_x(split["batch_size"])
    busy = split.dropna(subset=["busy_fraction"])
    if not busy.empty:
        out["busy"] = _busy_chart(busy, x)
    launches = split.dropna(subset=["host_launches_per_step"])
    if not launches.empty:
        out["launches"] = _launches_chart(launches, x)
    eager = split[(split["mode"] == "eager")].dropna(subset=["host_launch_ms"])
    if not eager.empty:
        long = eager.melt(id_vars=["batch_size"], value_vars=list(LAUNCH_VS_BUSY),
                          var_name="figure", value_name="ms").dropna(subset=["ms"])
        long["figure"] = long["figure"].map(lambda n: metric(n).label)
        figures = [metric(n).label for n in LAUNCH_VS_BUSY]
        out["launch-vs-busy"] = fitted(alt.Chart(long).mark_line(point=True).encode(
            x=x, y=alt.Y("ms:Q", title="Time per step (ms)", scale=padded()),
            color=alt.Color("figure:N", title="Eager", sort=figures,
                            legend=legend(entries=len(figures), labels=figures)),
            strokeDash=alt.StrokeDash("figure:N", legend=None),
            tooltip=[batch_tip(), alt.Tooltip("figure:N", title="What"),
                     alt.Tooltip("ms:Q", title="ms", format=".3f")],
        ), chart_title("Eager: launch time vs GPU busy",
                       "launch-bound where host launch time exceeds GPU busy time"))
    return out


def time_split_chart(points: Sequence[Measurement]) -> alt.HConcatChart | None:
    """time_split_charts side by side, for the HTML report and the PNG export."""
    charts = time_split_charts(points)
    if not charts:
        return None
    return alt.hconcat(*map(unfitted, charts.values())).properties(
        title="Where the time goes").resolve_scale(
        color="independent", strokeDash="independent")
