"""Run (/run?run=ID): the headline, then one view a tab (?view=): Speed, Memory, Time
split, Timeline, Points (every point, failures marked), Environment (with the reproducing
command and a share link)."""

import pandas as pd
import streamlit as st

from pages.common import (
    analysis,
    charts,
    cost,
    data,
    energy,
    graph_memory_view,
    links,
    report,
    ui,
    widgets,
    workload_views,
)
from pages.common.plain import plain
from runner.format.bundle import ENVIRONMENT_FIELDS

ui.ensure_frame()

# A run's headline and charts depend on its points only: built once per run and data
# version, they are what a shared link opened again draws from (building them was most of
# the page's time before its first chart; bench/page_speed.py).
PAIRS = [("speedup", "step-time"), ("memory", "memory-tradeoff"),
         ("energy", "energy-above-idle")]


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def headline_text(url: str, data_v: tuple, run_id: int) -> tuple[str | None, list[str]]:
    points = data.points([run_id])
    return cost.headline(points), report.headline(points)


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def figures(url: str, data_v: tuple, run_id: int) -> tuple[dict, dict]:
    """(the paired charts, the time split's charts); the time split's one-chart form (for
    exports) is not built here. Charts other than the clickable speedup one are kept as
    Vega-Lite specs: Altair validates a whole spec again each time a page draws it, about
    half of the 100 ms a chart cost per render."""
    points = data.points([run_id])
    paired = charts.run_charts(points, names=[n for pair in PAIRS for n in pair])
    split = charts.time_split_charts(analysis.time_split(points))
    return ({k: c if k == "speedup" else c.to_dict() for k, c in paired.items()},
            {k: c.to_dict() for k, c in split.items()})


def draw(figure, key: str) -> None:
    """A chart from figures(), stretched to its column like widgets.chart."""
    if isinstance(figure, dict):
        st.vega_lite_chart(spec=figure, key=key, width="stretch")
    else:
        widgets.chart(figure, key=key)


@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def tables(url: str, data_v: tuple, run_id: int) -> tuple:
    """(the speedup pivot, the points table): half a second of a page's run otherwise."""
    points = data.points([run_id])
    return report.speedup_pivot(points), report.points_table(points)


# --- settings: the run id comes from the URL only, so the link is the whole state --------
run_id = widgets.run_id_from_url()

# --- load -------------------------------------------------------------------------------
headers = data.headers([run_id])
if headers.empty:
    st.error(links.missing_runs([run_id], [])[0])
    st.page_link(ui.PAGES["runs"], label="Back to the runs", icon=":material/list:")
    st.stop()
header = {k: (None if not isinstance(v, (dict, list)) and pd.isna(v) else v)
          for k, v in headers.iloc[0].to_dict().items()}
if header.get("kind") == "serve":
    st.info(f"Run {run_id} is a serve run (a replay of dynamic batch sizes): its figures "
            "are on the Serve page.", icon=":material/dynamic_feed:")
    if ui.has_page("serve"):
        st.page_link(ui.PAGES["serve"], label=f"Open serve run {run_id}",
                     icon=":material/dynamic_feed:", query_params={"run": run_id})
    st.stop()
if header.get("kind") == "graph-memory":
    graph_memory_view.show(run_id, header)
    st.stop()
points = data.points([run_id])

# --- show -------------------------------------------------------------------------------
st.title(report.run_title(header, plain))
if header.get("label") and header.get("source") != "published":
    st.caption(plain(header["label"]))
widgets.published_banner(header)
if header["status"] != "done":
    st.warning(f"Run status: **{plain(header['status'])}**: its points may be incomplete.")

with widgets.drawn('The headline'):
    if points.empty:
        st.info("This run has no points yet.")
    else:
        summary, lines = headline_text(data.db_url(), data.version(), run_id)
        if summary:
            st.markdown(f"#### {summary}")
        counts = analysis.noise_counts(points)
        level, text = analysis.noise_summary(counts.iloc[0] if len(counts) else {})
        cost = analysis.launch_cost(points)
        widgets.noise_badge(level, text)
        st.caption("Host launch cost (one trivial kernel launch, a property of the host, "
                   "not the GPU): " + (f"median {cost.text()} over {cost.points} points."
                                       if cost else "not measured in this run."))
        # Collapsed, so that the charts start on the first screen at 1280x800; sent all the
        # same (a search of the page finds them).
        with st.expander(f"Every finding, mode by mode ({len(lines)})"):
            st.markdown("\n".join(f"- {line}" for line in lines))

# One view at a time, named in the URL (?view=Memory): only the open tab is computed and
# sent, so a shared link draws two charts, not nine, before the reader sees the first
# (bench/page_speed.py). A ?batch= link opens the timeline.
view = widgets.view_tabs(links.RUN_VIEWS, default=links.TIMELINE_VIEW
                         if "batch" in st.query_params else links.RUN_VIEWS[0])
speed, memory, energy_tab, split_tab, timeline_tab, points_tab, about = view
paired, split = {}, {}
with widgets.drawn("The charts"):
    paired, split = figures(data.db_url(), data.version(), run_id)
if not paired and not points.empty:
    st.info("No chart: no point of this run has a step time (every point failed, was "
            "skipped or is unsupported here; see Points).")


def draw_pair(names: tuple[str, str]) -> None:
    """Side by side, each chart stretched to its column."""
    shown = [n for n in names if n in paired]
    for col, name in zip(st.columns(len(shown)) if shown else [], shown, strict=True):
        with col:
            if name == "speedup":  # a click on a point opens its batch size's timeline
                widgets.chart_picking_batch(paired[name], key=f"chart_{name}",
                                            view=(widgets.VIEW_KEY, links.TIMELINE_VIEW))
            else:
                draw(paired[name], key=f"chart_{name}")


if speed.open:
    with speed, widgets.drawn("The charts"):
        draw_pair(PAIRS[0])
if memory.open:
    with memory, widgets.drawn("The charts"):
        draw_pair(PAIRS[1])
        if "memory" in paired:
            st.caption("Memory held = graph pool + peak allocated: the pool a CUDA graph keeps "
                       "reserved is part of what a mode costs (an upper bound: tensors living "
                       "in the pool while the peak is taken count in both). Diamonds: the "
                       "modes no other mode beats on both speed and memory at that batch size.")
if energy_tab.open:
    with energy_tab, widgets.drawn("The charts"):
        if "energy" in paired:
            draw_pair(PAIRS[2])
            st.caption(energy.CAPTION)
        elif not points.empty:
            st.info(energy.missing_reason(points))
if split_tab.open:
    with split_tab, widgets.drawn("The charts"):
        if not split:
            st.info("No time split: it needs profiled GPU points (CPU runs have none).")
        # Two a row: three in a row left each plot 60 px tall and cut its legend.
        items = list(split.items())
        for row in range(0, len(items), 2):
            for col, (name, chart) in zip(st.columns(2), items[row:row + 2], strict=False):
                with col:
                    draw(chart, key=f"chart_{name}")

if timeline_tab.open:
    with timeline_tab, widgets.drawn("The step timeline"):
        st.subheader("One step, launch by launch", anchor=widgets.TIMELINE_ANCHOR)
        widgets.timeline_section([run_id], points, lambda x: x["mode"], key="timeline")

if points_tab.open:
    with points_tab:
        st.subheader("Speedup at a glance")
        st.caption("Speedup over eager (95% interval where measured) · extra memory over "
                   "eager's pool + peak, per batch size and mode.")
        with widgets.drawn("The speedup table"):
            st.dataframe(tables(data.db_url(), data.version(), run_id)[0], hide_index=True,
                         key="speedup_pivot")
        for section in workload_views.run_sections(header, points):
            st.subheader(section.title)
            st.caption(section.caption)
            if section.chart is not None:
                widgets.chart(section.chart, key=f"workload_chart_{section.title}")
            st.dataframe(section.table, hide_index=True, key=f"workload_{section.title}")
        st.subheader("Points")
        with widgets.drawn('The points table'):
            table = tables(data.db_url(), data.version(), run_id)[1]
            bad = (int((~table["Status"].astype(str).str.startswith("ok")).sum())
                   if len(table) else 0)
            if bad:
                st.caption(f"{bad} point(s) did not produce a measurement: marked in the "
                           "Status column with their message.")
            st.dataframe(table, hide_index=True, key="points_table",
                         column_config={"Status": st.column_config.TextColumn(width="medium")})
        st.caption(report.RESERVED_NOTE)

if about.open:
    with about:
        left, right = st.columns(2)
        with left:
            st.subheader("Environment")
            env = pd.DataFrame({"field": list(ENVIRONMENT_FIELDS),
                                "value": ["—" if header.get(f) is None else str(header[f])
                                          for f in ENVIRONMENT_FIELDS]})
            st.dataframe(env, hide_index=True, key="env_table")
        with right:
            st.subheader("Reproduce")
            with widgets.drawn("The command"):
                offer = links.reproduce(header, points["batch_size"].tolist(),
                                        points["mode"].tolist())
                if offer.note:
                    st.caption(plain(offer.note))
                if offer.command:  # st.code: a copy button; only for a catalog workload
                    st.code(offer.command, language="bash", wrap_lines=True)

            st.subheader("Share")
            widgets.share_link(links.run_url(widgets.app_url(), run_id))
            st.caption("Each view has its own link: the address bar carries it (?view=, and "
                       "?batch= for the timeline).")

# Under every view. The address bar is this view's share link (?view= and ?batch= follow
# the tabs and the picker); the copyable one is under Environment, since st.code's
# highlighter is a 1.5 MB script a first chart would wait for.
st.divider()
left, middle, right = st.columns([2, 2, 1])
left.page_link(ui.PAGES["import"], label="Download: bundle, CSV, HTML report, PNG charts",
               icon=":material/download:", query_params={"run": run_id})
middle.page_link(ui.PAGES["compare"], label="Compare with other runs",
                 icon=":material/compare_arrows:", query_params={"run": run_id})
with right:
    widgets.delete_run_button(run_id)
