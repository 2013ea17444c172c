"""The encodings every page chart shares: one colour per mode, the log2 batch-size x
axis, log y axes with 1-2-5 ticks, tooltips from the metrics table (units in one place),
lines only where a series has enough points, the 1x rule and 95% interval bars.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from contract.figure_rules import MAX_FIGURE
from contract.vocab import MODE_TABLE, MODES
from pages.charts.layout import legend, present_modes
from pages.logic.metrics import metric, title

# One colour per mode everywhere (charts, report, the Serve page), so a reader learns it
# once: the contract's mode table holds them (colour-blind-safe hues; eager, the baseline,
# is grey).
MODE_COLORS = {m: MODE_TABLE[m].color for m in MODES}


# Fewer points than this in one series are drawn unjoined: the published L40S run has
# batch 8 and 8192 only, and a line between them would invent three decades of curve.
MIN_LINE_POINTS = 3


def mode_color(modes=MODES, legend_on: bool = True) -> alt.Color:
    modes = present_modes(modes) or list(MODES)
    return alt.Color("mode:N", title="Mode", sort=modes,
                     scale=alt.Scale(domain=modes, range=[MODE_COLORS[m] for m in modes]),
                     legend=legend(entries=len(modes)) if legend_on else None)


def batch_x() -> alt.X:
    # labelFlush keeps the first and last labels (16,777,216 on kernel-chain) inside the
    # plot's edges instead of half past them.
    return alt.X("batch_size:Q", title=title("batch_size"),
                 scale=alt.Scale(type="log", base=2, nice=False),
                 axis=alt.Axis(format=",d", labelOverlap=True, labelFlush=True))


def log_ticks(values) -> list[float]:
    """1-2-5 ticks covering the values (positive ones), one decade beyond at neither end:
    vega's own log ticks drop the labels between decades and sometimes 1 itself."""
    # Within what a figure may be (contract/figure_rules.py): a point stored before
    # imports checked that had a p10 of 1.8e308 raised OverflowError here (issue 48).
    v = [float(x) for x in values if x is not None and not pd.isna(x)
         and 1 / MAX_FIGURE <= float(x) <= MAX_FIGURE]
    if not v:
        return [1.0]
    lo, hi = math.floor(math.log10(min(v))), math.ceil(math.log10(max(v)))
    ticks = [round(m * 10.0 ** e, 12) for e in range(lo, hi + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if min(v) / 1.0001 <= t <= max(v) * 1.0001]
    below = [t for t in ticks if t < min(v)][-1:]
    above = [t for t in ticks if t > max(v)][:1]
    return below + inside + above


def log_y(field: str, values, name: str | None = None) -> alt.Y:
    ticks = log_ticks(values)
    return alt.Y(f"{field}:Q", title=title(name or field),
                 scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False),
                 axis=alt.Axis(values=ticks, format="~g"))


def tip(name: str, fmt: str | None = None) -> alt.Tooltip:
    m = metric(name)
    # d3-format strings for the tooltip, derived from the metric's unit.
    d3 = fmt or {"ms": ".3f", "x": ".2f", "MiB": ",.1f", "s": ".2f"}.get(m.unit, ",.2f")
    return alt.Tooltip(f"{name}:Q", title=m.title, format=d3)


def mode_tip() -> alt.Tooltip:
    return alt.Tooltip("mode:N", title="Mode")


def batch_tip() -> alt.Tooltip:
    return alt.Tooltip("batch_size:Q", title="Batch size", format=",d")


def lines_and_points(x: alt.X, y: alt.Y, color: alt.Color, tooltip: list,
                      by: list[str], **encoding) -> list[alt.Chart]:
    """A line per series (grouped by `by`) that has MIN_LINE_POINTS points or more, and a
    point for every row: short series stay unjoined. On the layer's shared data."""
    n = "_series_points"
    line = (alt.Chart().mark_line().encode(x=x, y=y, color=color, **encoding)
            .transform_joinaggregate(**{n: "count()"}, groupby=by)
            .transform_filter(f"datum.{n} >= {MIN_LINE_POINTS}"))
    points = alt.Chart().mark_point(filled=True, size=50).encode(
        x=x, y=y, color=color, tooltip=tooltip, **encoding)
    return [line, points]


def one_x_rule() -> alt.Chart:
    """The 1x line: above it a mode is faster than eager, below it slower."""
    return alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(
        strokeDash=[4, 4], color="#444").encode(y="y:Q")


def error_bars(df: pd.DataFrame, low: str, high: str, y: alt.Y, color: alt.Color,
                **encoding) -> alt.Chart | None:
    """The 95% interval of each point that has one, as a vertical bar with ticks, on the
    layer's shared data (a filter skips points without one); None when no point has one."""
    if not df[[low, high]].notna().all(axis=1).any():
        return None
    return alt.Chart().mark_errorbar(ticks=True).encode(
        x=batch_x(), y=y, y2=f"{high}:Q", color=color, **encoding,
    ).transform_filter(f"isValid(datum['{low}']) && isValid(datum['{high}'])")
