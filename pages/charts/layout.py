"""How a chart is laid out on a page, for every chart builder (pages.charts.run_charts,
trends, serve_charts): the plot's own height, legends and titles that fit a half-page
column, nothing cut at the chart's edge. Altair and Vega do the layout from these
properties; a page only stretches a chart to its column.
"""

from __future__ import annotations

import textwrap
from typing import Literal

import altair as alt

from contract.vocab import MODES

# WIDTH is what the report's SVGs get (a page stretches a chart to its column); HEIGHT is
# the plot area's own (see fitted): a chart read at a glance needs room for its log ticks,
# and 1280x800 shows two such charts side by side.
WIDTH, HEIGHT = 520, 220
# Legend labels and axis titles are never shortened with an ellipsis: the longest label
# here (a GPU and torch version) fits this many pixels.
LABEL_LIMIT = 420
PADDING = {"left": 8, "top": 8, "right": 8, "bottom": 4}
# Where the pages put a legend: above the plot, or under it (encodings.mode_color says
# when); Vega-Lite's other places are never used.
Orient = Literal["top", "bottom"]


def present_modes(modes) -> list[str]:
    """The modes among `modes`, in the table's order: a legend lists only these (a CPU run
    has no graph modes, a speedup chart no eager)."""
    have = {str(m) for m in modes}
    return [m for m in MODES if m in have]


# A top legend starts at the plot's left edge, so one row fits the plot's width in a
# half-page column at 1280x800 (about 330 px); a legend entry is its symbol and gap and
# its label at about 7 px a character.
LEGEND_ROW_PX = 340
LEGEND_ENTRY_PX, LEGEND_CHAR_PX = 32, 7.0


def legend(orient: Orient = "top", entries: int = 4, labels=None, **kw) -> alt.Legend:
    """A legend that fits a half-page column, labels never cut: at most two entries a
    row, or, given its `labels`, all in one row where they fit the plot's width (three
    graph modes do, four modes do not; a row saved is about 25 px more plot on the first
    screen)."""
    kw.setdefault("offset", 6)  # vega's 18 px left a gap above the plot
    columns = min(max(entries, 1), 2)
    if labels is not None and sum(LEGEND_ENTRY_PX + LEGEND_CHAR_PX * len(str(x))
                                  for x in labels) <= LEGEND_ROW_PX:
        columns = max(len(list(labels)), 1)
    return alt.Legend(orient=orient, columns=columns, labelLimit=LABEL_LIMIT, **kw)


# A subtitle wraps at this many characters (about 300 px in its 11 px font), so that it
# fits the plot of a half-page chart at 1280x800: fit-x narrows the plot until the title
# fits, and a one-line subtitle of 100 characters left Trends' step charts a plot 14 px
# wide, the line still cut at the svg's edge.
SUBTITLE_CHARS = 60


def chart_title(text: str, subtitle: str | None = None) -> alt.TitleParams:
    """A short title at the left edge, its detail in a smaller subtitle of lines that fit
    a half-page chart: a centred long title ran past a half-page chart's edge."""
    lines = textwrap.wrap(subtitle or "", SUBTITLE_CHARS, break_long_words=False,
                          break_on_hyphens=False)
    return alt.TitleParams(text, subtitle=(lines[0] if len(lines) == 1 else lines) if lines
                           else alt.Undefined, anchor="start", frame="group", limit=0)


def fitted(chart, title: alt.TitleParams | str, height: int = HEIGHT, width: int = WIDTH):
    """The chart with its plot area `height` px tall and its whole width `width` (a page
    stretches it to the column): autosize fit-x fits the width only, so legends and titles
    add to the height instead of squeezing the plot."""
    # The padding keeps text off the svg's edge: vega sizes text by its font size, the
    # browser draws the glyph's whole line box, a few pixels taller.
    # Assigned on a copy rather than through .properties(): that validates each value
    # against the schema, about 15 ms a chart (a page draws seven; to_dict validates the
    # whole spec once anyway).
    out = chart.copy(deep=False)
    out.width, out.height, out.title, out.padding = width, height, title, PADDING
    out.autosize = alt.AutoSizeParams(type="fit-x", contains="padding")
    return out


def unfitted(chart):
    """A fitted chart made a panel of a concat (exports): autosize is top-level only."""
    panel = chart.copy(deep=False)
    panel.autosize = alt.Undefined  # assigned, not .properties(): that validates the value
    panel.padding = alt.Undefined
    return panel
