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
from pages.charts.layout import Orient, legend, present_modes
from pages.logic.metrics import metric, title

# One colour per mode everywhere (charts, report, the Serve page), so a reader learns it
# once: the contract's mode table holds them (colour-blind-safe hues; eager, the baseline,
# is grey).
MODE_COLORS = {m: MODE_TABLE[m].color for m in MODES}


# Fewer points than this in one series are drawn unjoined: the published L40S run has
# batch 8 and 8192 only, and a line between them would invent three decades of curve.
MIN_LINE_POINTS = 3


def mode_color(modes=MODES, legend_on: bool = True, orient: Orient = "top") -> alt.Color:
    """One colour per mode, its legend without a title (the labels name them) in one row
    where it fits. `orient="bottom"`: under the plot, for a chart with no other legend, so
    its plot starts right under the title: two legend rows of two and a title took about
    80 px above each chart of the Speed view (issue 46), and the two charts side by side
    (three modes and four) started at different heights."""
    modes = present_modes(modes) or list(MODES)
    return alt.Color("mode:N", title=None, sort=modes,
                     scale=alt.Scale(domain=modes, range=[MODE_COLORS[m] for m in modes]),
                     legend=legend(orient, entries=len(modes), labels=modes)
                     if legend_on else None)


# The narrowest plot a batch axis is drawn in (a half-page column at 1280 px, less its y
# axis), and the width of one label character at vega's axis font (digits and commas): what
# says whether the measured batch sizes' labels fit side by side.
BATCH_PLOT_PX = 300
LABEL_CHAR_PX = 6.5
# Pixels between the plot's edges and the first and last batch sizes: a marker (or a bar)
# at either end is drawn whole, not cut in half by the plot's edge.
BATCH_PAD_PX = 14


def padded(**kw) -> alt.Scale:
    """A linear scale with half BATCH_PAD_PX of room at either end, so that a marker at
    its first or last value (a graph pool of 0 MiB, the last capture) is drawn whole
    inside the plot; not niced, which would add a tick below 0."""
    return alt.Scale(padding=BATCH_PAD_PX // 2, nice=False, **kw)


def batch_ticks(batches) -> list[int]:
    """The measured batch sizes, each once, in order: a batch axis ticks these and only
    these (a tick at 4 or 16 on a run that measured 1, 8, 64 named batch sizes never run)."""
    return sorted({int(b) for b in batches
                   if b is not None and not pd.isna(b) and 0 < float(b) <= MAX_FIGURE})


def _crowded(ticks: list[int]) -> bool:
    """Would two neighbouring labels overlap, written level? (Then they are slanted, never
    dropped: every measured batch size keeps its label.)"""
    if len(ticks) < 2:
        return False
    span = math.log2(ticks[-1]) - math.log2(ticks[0])
    for a, b in zip(ticks, ticks[1:], strict=False):
        gap = (math.log2(b) - math.log2(a)) / span * BATCH_PLOT_PX
        if gap < (len(f"{a:,}") + len(f"{b:,}")) / 2 * LABEL_CHAR_PX + 6:
            return True
    return False


def batch_x(batches) -> alt.X:
    """The log2 batch-size axis of every chart, ticked and labelled at exactly the batch
    sizes measured (`batches`: the chart's own, or every layer's where two charts must
    share one domain), with room for a whole marker at either end."""
    ticks = batch_ticks(batches)
    lo: float  # a batch size, or half of one
    hi: float
    lo, hi = (ticks[0], ticks[-1]) if ticks else (1, 1)
    if lo == hi:  # one batch size: a log scale needs a span to place it in
        lo, hi = lo / 2, hi * 2
    slanted = _crowded(ticks)
    # labelFlush (within the padding): the first and last labels (16,777,216 on
    # kernel-chain) read inward from their ticks instead of half past the plot's edges.
    axis = alt.Axis(values=ticks, format=",d", labelOverlap=False,
                    labelFlush=BATCH_PAD_PX + 1 if not slanted else False,
                    labelAngle=-35 if slanted else 0, labelAlign="right" if slanted else
                    alt.Undefined)
    return alt.X("batch_size:Q", title=title("batch_size"),
                 scale=alt.Scale(type="log", base=2, nice=False, domain=[lo, hi],
                                 padding=BATCH_PAD_PX),
                 axis=axis)


def batch_band_x(batches) -> alt.X:
    """The batch axis of a bar chart (a band a measured batch size): labelled as the log2
    axis is ('1,024', never '1024' beside it), every label kept, slanted where the bands
    are too narrow for them level."""
    ticks = batch_ticks(batches)
    widest = max((len(f"{b:,}") for b in ticks), default=1) * LABEL_CHAR_PX + 6
    slanted = bool(ticks) and widest > BATCH_PLOT_PX / len(ticks)
    return alt.X("batch_size:O", title=title("batch_size"), sort=ticks,
                 axis=alt.Axis(labelExpr="format(datum.value, ',d')", labelOverlap=False,
                               labelAngle=-35 if slanted else 0,
                               labelAlign="right" if slanted else alt.Undefined))


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
    # Padded: a figure just under its top tick (the L40S's 9.88x under 10) was a marker
    # cut in half by the plot's edge.
    return alt.Y(f"{field}:Q", title=title(name or field),
                 scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False,
                                 padding=BATCH_PAD_PX // 2),
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
               x: alt.X | None = None, **encoding) -> alt.Chart | None:
    """The 95% interval of each point that has one, as a vertical bar with ticks on the
    chart's log axis, on the layer's shared data (a filter skips points without one);
    None when no point has one. `x`: the chart's batch axis (by default one over the
    frame's batch sizes). An interval whose low is 0 (clamped by the runner: its processes
    disagreed so much that it ran below 0) has no place on a log axis: vega drew it from
    the plot's top edge down to its high, a bar where no figure is; it is left out, and
    the chart says so (open_below_text)."""
    if not (df[[low, high]].notna().all(axis=1) & (df[low] > 0)).any():
        return None
    return alt.Chart().mark_errorbar(ticks=True).encode(
        x=x if x is not None else batch_x(df["batch_size"]), y=y, y2=f"{high}:Q",
        color=color, **encoding,
    ).transform_filter(f"isValid(datum['{low}']) && isValid(datum['{high}']) "
                       f"&& datum['{low}'] > 0")


def open_below_text(df: pd.DataFrame, low: str, high: str) -> str:
    """'; no bar where the interval reaches 0' when error_bars left one out, else ''."""
    gone = df[high].notna() & df[low].notna() & (df[low] <= 0)
    return "; no bar where the interval reaches 0 (see Points)" if gone.any() else ""
