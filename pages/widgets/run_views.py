"""The Run page's builders (cached per run and database state) and its table views:
Points and Environment. pages/run.py draws the headline and picks the view."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

import altair as alt
import pandas as pd
import streamlit as st

from contract.measurement import Measurement
from contract.run_summary import RunHeader
from pages.charts import run_charts, split_charts, timeline_chart, workload_charts
from pages.logic import links, point_groups, points_table, run_text, workload_views
from pages.logic.metrics import MISSING, OPEN_BELOW_NOTE
from pages.logic.plain import MAX_CELL, MAX_SHOWN, cut, plain
from pages.widgets import data, parts, url

# A run's headline and charts depend on its points only: built once per run and data
# version, they are what a shared link opened again draws from (building them was most of
# the page's time before its first chart; bench/page_speed.py).
PAIRS = [("speedup", "step-time"), ("memory", "memory-tradeoff"),
         ("energy", "energy-above-idle")]
# A published kernel-chain run's own figures: the Speed view's chart where no step was given.
PER_KERNEL = "per-kernel"


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def headline_text(url: str, data_v: tuple, run_id: int) -> tuple[str | None, list[str]]:
    """(the run's summary's headline, every finding mode by mode)."""
    found = data.summary(run_id)
    return (found.headline() if found else None), run_text.headline(data.run_points(run_id))


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def figures(url: str, data_v: tuple, run_id: int
            ) -> tuple[dict[str, dict], dict[str, dict]]:
    """(the paired charts, the time split's charts) as Vega-Lite specs, the speedup one
    with its click selection (timeline_view.chart_picking_batch); the time split's
    one-chart form (for exports) is not built here. Specs, not Altair charts: Altair
    validates a whole spec again each time a page draws it, about half of the 100 ms a
    chart cost per render, and the clickable speedup chart came first."""
    points = data.run_points(run_id)
    paired = run_charts.run_charts(points, names=[*(n for pair in PAIRS for n in pair),
                                                  PER_KERNEL])
    split = {**split_charts.host_split_charts(points),
             **split_charts.time_split_charts(points)}
    if "speedup" in paired:  # run_charts.speedup_chart's layers
        paired["speedup"] = timeline_chart.clickable(cast(alt.LayerChart, paired["speedup"]))
    return ({k: c.to_dict() for k, c in paired.items()},
            {k: c.to_dict() for k, c in split.items()})


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def tables(url: str, data_v: tuple, run_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the speedup pivot, the points table): half a second of a page's run otherwise."""
    points = data.run_points(run_id)
    return points_table.speedup_pivot(points), points_table.points_table(points)


def whole_table(table: pd.DataFrame, key: str,
                widest: int = points_table.WIDEST_COLUMN_PX,
                shown: point_groups.Table | None = None) -> None:
    """A table with every row on the page (no scroll box) and every column as wide as its
    text up to `widest` px (points_table.column_widths): the grid cut the Verdict column at
    1280 px. Given a subject's `shown` table, its headers, tooltips and widths."""
    blank = [c for c in table.columns if table[c].isna().any()]
    if blank:  # unknown is a dash on every table here, never "None" or "nan"
        table = table.astype({c: object for c in blank})
        table[blank] = table[blank].where(table[blank].notna(), MISSING)
    widths = shown.widths if shown else points_table.column_widths(table, widest)
    labels = shown.labels if shown else {}
    helps = shown.helps if shown else {}
    st.dataframe(table, hide_index=True, key=key,
                 height=points_table.table_height(len(table)),
                 column_config={c: st.column_config.NumberColumn(
                                    labels.get(c, c), width=w, help=helps.get(c) or None,
                                    format=points_table.FLOAT_FORMAT)
                                if pd.api.types.is_float_dtype(table[c])
                                else st.column_config.Column(
                                    labels.get(c, c), width=w, help=helps.get(c) or None)
                                for c, w in widths.items()})


def points_view(run_id: int, header: RunHeader, points: Sequence[Measurement]) -> None:
    """The speedup pivot, the workload's own sections and every point."""
    st.subheader("Speedup at a glance")
    st.caption(points_table.PIVOT_CAPTION)
    with parts.drawn("The speedup table"):
        pivot = tables(data.db_url(), data.version(), run_id)[0]
        if pivot.empty:
            st.info("No speedups: no mode has an ok point with a step time beside eager's "
                    "at the same batch size.")
        else:  # a static table: its cells wrap, so every mode is on screen at 1280 px (in
            # the grid the cuda-graph column sat past the page's edge, a scroll away)
            st.table(pivot.set_index("Batch size"))
    for section in workload_views.run_sections(header, points):
        st.subheader(section.title)
        st.caption(section.caption)
        if section.pools is not None:
            parts.chart(workload_charts.train_pool_chart(section.pools),
                        key=f"workload_chart_{section.title}")
        whole_table(section.table, key=f"workload_{section.title}")
    st.subheader("Points")
    with parts.drawn('The points table'):
        points_tables(tables(data.db_url(), data.version(), run_id)[1], points)
    st.caption(points_table.MEMORY_NOTE)


def points_tables(table: pd.DataFrame, points: Sequence[Measurement]) -> None:
    """Every point, one table a subject (point_groups): each fits the page at 1280 px; the
    ones read less often in expanders; then each failure's message and each note whole."""
    shown, empty = point_groups.subject_tables(table)
    failed = point_groups.status_lines(points)
    if failed:
        st.caption(f"{len(failed)} point(s) did not produce a measurement: marked in the "
                   "Status column, each message under the tables.")
    for t in shown:
        with st.expander(t.title) if t.folded else st.container():
            if not t.folded:
                st.markdown(f"**{t.title}**")
            whole_table(t.frame, key=f"points_{t.title}", shown=t)
    if empty:
        st.caption("No figure in this run for: " + ", ".join(empty) + " (every cell a dash).")
    if any(str(v).startswith("≤") for t in shown for v in t.frame.to_numpy().ravel()):
        st.caption(OPEN_BELOW_NOTE)
    if failed:
        st.markdown("**Points that did not produce a measurement**\n"
                    + "\n".join(f"- {plain(line)}" for line in failed))
    notes = points_table.note_lines(points)
    if notes:  # the Noise table's Note cells are cut; each note in full, one line a point
        st.markdown("**Points whose figures need a word**\n"
                    + "\n".join(f"- {plain(n)}" for n in notes))


def long_params_download(run_id: int, header: RunHeader) -> None:
    """Where a parameter is longer than a page shows (MAX_CELL: cut in titles, tables and
    pickers), its full value a click away: the run's parameters as JSON."""
    params = dict(header.workload_params or {})
    long = [k for k, v in params.items() if len(str(v)) > MAX_CELL or len(k) > MAX_CELL]
    if not long:
        return
    st.caption(plain(f"Parameters cut on these pages: {', '.join(cut(k, 40) for k in long)}"
                     " (longer than a line). Every value in full:"))
    st.download_button("Workload parameters (.json)", json.dumps(params, indent=1),
                       f"run-{run_id}-parameters.json", "application/json",
                       key="params_dl", on_click="ignore", icon=":material/download:")


def environment_view(run_id: int, header: RunHeader, points: Sequence[Measurement]) -> None:
    """The environment, the command that reproduces the run, and its share link."""
    left, right = st.columns(2)
    with left:
        st.subheader("Environment")
        env = pd.DataFrame(run_text.environment_rows(header), columns=["field", "value"])
        whole_table(env, key="env_table")
    with right:
        st.subheader("Reproduce")
        with parts.drawn("The command"):
            offer = links.reproduce(header, [m.batch_size for m in points],
                                    [m.mode for m in points])
            if offer.note:
                st.caption(plain(offer.note))
            if offer.command and len(offer.command) > MAX_SHOWN:
                # A parameter of 100,000 characters made a command the browser took 15 s
                # to lay out: too long to read or paste, it is a click away instead.
                st.caption(f"The command is {len(offer.command):,} characters long (a "
                           "parameter holds most of it): too long to show.")
                st.download_button("Command (.sh)", offer.command + "\n",
                                   f"run-{run_id}-command.sh", "text/x-shellscript",
                                   key="command_dl", on_click="ignore",
                                   icon=":material/download:")
            elif offer.command:  # st.code: a copy button; only for a catalog workload
                st.code(offer.command, language="bash", wrap_lines=True)
        long_params_download(run_id, header)

        st.subheader("Share")
        parts.share_link(url.run_share_url(run_id))
        st.caption("Each view has its own link: the address bar carries it (?view=, and "
                   "?batch= and ?fit= for the timeline).")
