"""Host and GPU apart, drawn (the Run page's Time split view; issue 39): each mode's step
split into GPU busy, launch cost and the rest as shares of the step, batch by batch, and
eager's rounds against the round's launch cost with the projection line. The frames come
from pages/logic/step_split.py; the rules from contract/host_split.py.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from contract import host_split
from contract.vocab import MODES
from pages.charts.encodings import batch_tip, batch_x
from pages.charts.layout import chart_title, fitted, legend
from pages.logic import step_split

# Three parts told apart at a glance, GPU work in the GPU's green, the launches in the
# colour the timeline gives a kernel launch.
PART_COLORS = {"gpu": "#59a14f", "launch": "#4e79a7", "rest": "#bab0ac"}


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
    x = batch_x()
    x.scale = alt.Scale(type="log", base=2, nice=False, padding=12)  # whole end bars
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


def launch_scatter_chart(rounds: pd.DataFrame, lines: pd.DataFrame,
                         mode: str = "eager") -> alt.LayerChart | None:
    """The mode's step in each round against that round's launch cost, a colour per
    process, a grey line per batch size: the step projected from the point's GPU busy and
    host time (host_split.projected_step). Log axes: launch costs and steps span decades
    across batch sizes. None without rounds that carry a launch cost."""
    if rounds.empty:
        return None
    rounds = rounds.assign(process=rounds["process"].map(lambda p: f"process {p}"))
    procs = sorted(set(rounds["process"]))
    x = alt.X("launch_us:Q", title="Launch cost in the round (us a launch)",
              scale=alt.Scale(type="log", nice=False, zero=False))
    y = alt.Y("step_ms:Q", title=f"{mode} step (ms)",
              scale=alt.Scale(type="log", nice=False, zero=False))
    dots = alt.Chart(rounds).mark_point(filled=True, size=36, opacity=0.75).encode(
        x=x, y=y, color=alt.Color("process:N", title="Process", sort=procs,
                                  scale=alt.Scale(scheme="dark2"),
                                  legend=legend(entries=len(procs))),
        tooltip=[batch_tip(), alt.Tooltip("process:N", title="Process"),
                 alt.Tooltip("round:Q", title="Round"),
                 alt.Tooltip("launch_us:Q", title="Launch cost (us)", format=".1f"),
                 alt.Tooltip("step_ms:Q", title="Step (ms)", format=".3f")])
    layers = [dots]
    if not lines.empty:
        layers.insert(0, alt.Chart(lines).mark_line(color="#777", strokeDash=[5, 3]).encode(
            x=x, y=y, detail="batch_size:O", tooltip=[batch_tip()]))
        # Each line named at its left end, above it: at the right end a label ran past
        # the plot's edge.
        ends = lines.loc[lines.groupby("batch_size")["launch_us"].idxmin()]
        layers.append(alt.Chart(ends).mark_text(align="left", dx=2, dy=-7, fontSize=10,
                                                color="#555").encode(
            x=x, y=y, text=alt.Text("batch_size:Q", format=",d")))
    # A short subtitle: fit-x narrows the plot until the title fits, so a long one left
    # the plot 80 px wide. The projection's rule is in the view's caption.
    return fitted(alt.layer(*layers), chart_title(
        f"{mode}: step against the round's launch cost",
        "dots: rounds · dashed: projected step, by batch size"))


def host_split_charts(points: pd.DataFrame) -> dict[str, alt.TopLevelMixin]:
    """The Time split view's host-and-GPU charts in reading order: each mode's split
    ('split-<mode>'), then eager's rounds against their launch cost ('launch-scatter')."""
    long = step_split.split_long(step_split.split_frame(points))
    out: dict[str, alt.TopLevelMixin] = {}
    for mode in MODES:
        chart = split_share_chart(long, mode)
        if chart is not None:
            out[f"split-{mode}"] = chart
    rounds = step_split.launch_rounds(points)
    lines = step_split.projection_lines(points, rounds)
    # Without GPU busy time (a CPU run) there is no projection to hold the rounds to.
    scatter = launch_scatter_chart(rounds, lines) if not lines.empty else None
    if scatter is not None:
        out["launch-scatter"] = scatter
    return out
