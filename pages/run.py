"""Run (/run?run=ID): the headline, then one view a tab (?view=): Speed, Memory, Energy,
Time split, Timeline, Points (every point, failures marked), Environment (with the
reproducing command and a share link). The views' builders and tables: run_views."""

import streamlit as st

from contract import noise
from contract.memory import OLD_METHOD
from pages.logic import cost, energy, links, run_text, step_split
from pages.logic.plain import plain
from pages.widgets import data, frame, graph_memory_view, parts, run_views, timeline_view, url

frame.ensure_frame()

# --- settings: the run id comes from the URL only, so the link is the whole state --------
run_id = url.run_id_from_url()

# --- load -------------------------------------------------------------------------------
header = data.header(run_id)
if header is None:
    st.error(links.missing_runs([run_id], [])[0])
    st.page_link(frame.PAGES["runs"], label="Back to the runs", icon=":material/list:")
    st.stop()
if header.kind == "serve":
    st.info(f"Run {run_id} is a serve run (a replay of dynamic batch sizes): its figures "
            "are on the Serve page.", icon=":material/dynamic_feed:")
    if frame.has_page("serve"):
        st.page_link(frame.PAGES["serve"], label=f"Open serve run {run_id}",
                     icon=":material/dynamic_feed:", query_params={"run": str(run_id)})
    st.stop()
if header.kind == "graph-memory":
    graph_memory_view.show(run_id, header)
    st.stop()
points = data.run_points(run_id)

# --- show -------------------------------------------------------------------------------
# The header keeps within about 260 px at 1280x800 (title, label, the answer, one line of
# context, the findings collapsed), so the first chart starts on the first screen: at
# 530 px it started at the fold (issue 37; tests/e2e/test_run_figures.py measures it).
found = data.summary(run_id)
if found is None:  # deleted since its header was read (the summary is a second read)
    st.error(links.missing_runs([run_id], [])[0])
    st.stop()
st.title(run_text.run_title(found.header, plain, torch=False))
# The run's own label opens the context line under the answer (a published run's label is
# its source, in the banner).
label = [plain(header.label)] if header.label and \
    header.source != "published" else []
parts.published_banner(header)
if header.status != "done":
    st.warning(f"Run status: **{plain(header.status)}**: its points may be incomplete.")

with parts.drawn('The headline'):
    if not points:
        st.info("This run has no points yet.")
    else:
        summary, lines = run_views.headline_text(data.db_url(), data.version(), run_id)
        # Without a speedup, a published run's own figures are its answer (the V100 blog's
        # per-kernel times); no headline at all left the page without one.
        summary = summary or run_text.per_kernel_line(points)
        if summary:
            st.markdown(f"##### {plain(summary)}")
        level, text = noise.run_noise(points)
        launch = noise.launch_cost(points)
        st.caption(" · ".join([
            *label, parts.noise_badge(level, text), run_text.torch_text(found.header, plain),
            "launch cost " + (launch.text() if launch else "not measured")]),
            help="Launch cost: the host's cost of one trivial kernel launch, timed beside "
                 "the rounds: a property of the host, not the GPU. " + (
                     f"The median and the range over {launch.points} points." if launch else
                     "This run did not measure it."))
        # Collapsed, so that the charts start on the first screen at 1280x800; sent all the
        # same (a search of the page finds them).
        with st.expander(f"Every finding, mode by mode ({len(lines)})"):
            st.markdown("\n".join(f"- {line}" for line in lines))

# One view at a time, named in the URL (?view=Memory): only the open tab is computed and
# sent, so a shared link draws two charts, not nine, before the reader sees the first
# (bench/page_speed.py). A ?batch= link opens the timeline.
view = url.view_tabs(links.RUN_VIEWS, default=links.TIMELINE_VIEW
                         if "batch" in st.query_params else links.RUN_VIEWS[0])
speed, memory, energy_tab, split_tab, timeline_tab, points_tab, about = view
paired: dict[str, dict] = {}
split: dict[str, dict] = {}
with parts.drawn("The charts"):
    paired, split = run_views.figures(data.db_url(), data.version(), run_id)
if not paired and points:
    st.info("No chart: no point of this run has a step time (every point failed, was "
            "skipped or is unsupported here, or gave no figure; see Points).")


def draw_pair(names: tuple[str, str]) -> None:
    """Side by side, each chart stretched to its column."""
    shown = [n for n in names if n in paired]
    for col, name in zip(st.columns(len(shown)) if shown else [], shown, strict=True):
        with col:
            if name == "speedup":  # a click on a point opens its batch size's timeline
                timeline_view.chart_picking_batch(paired[name], key=f"chart_{name}",
                                                  view=(url.VIEW_KEY, links.TIMELINE_VIEW))
            else:
                parts.chart(paired[name], key=f"chart_{name}")


if speed.open:
    with speed, parts.drawn("The charts"):
        if run_views.PER_KERNEL in paired and "speedup" not in paired:
            left, _ = st.columns(2)
            with left:
                parts.chart(paired[run_views.PER_KERNEL], key="chart_per_kernel")
            st.caption(plain(run_text.per_kernel_line(points) or "") + ". Its source gives "
                       "no step time, so there is no speedup or step-time chart: the Points "
                       "view has every figure it gives.")
        else:
            draw_pair(run_views.PAIRS[0])
if memory.open:
    with memory, parts.drawn("The charts"):
        draw_pair(run_views.PAIRS[1])
        if "memory" in paired:
            st.caption("Memory cost over eager: what a mode keeps on the GPU beyond what eager "
                       "keeps at the same batch size, each measured alone from a clean state "
                       "(its graph pool and default pool, less eager's own). Diamonds: the "
                       "modes no other mode beats on both speed and memory cost at that "
                       "batch size.")
            if "memory-tradeoff" not in paired:
                st.caption(plain("No speed-against-memory chart: this run's memory was "
                                 f"{OLD_METHOD}, and it has no cost over eager to "
                                 "plot; its graph pools are drawn as parts."))
        elif points:
            st.info(cost.missing_reason(points, header.device))
if energy_tab.open:
    with energy_tab, parts.drawn("The charts"):
        if "energy" in paired:
            draw_pair(run_views.PAIRS[2])
            left_out = energy.left_out_text(points)
            st.caption(energy.CAPTION + (f" {left_out}" if left_out else ""))
        elif points:
            st.info(energy.missing_reason(points, header.source == "published"))
if split_tab.open:
    with split_tab, parts.drawn("The charts"):
        if not split:
            st.info("No time split: it needs profiled GPU points, with GPU busy time and "
                    "launches a step (CPU runs and published figures have none).")
        # Two a row: three in a row left each plot 60 px tall and cut its legend.
        items = list(split.items())
        for row in range(0, len(items), 2):
            for col, (name, chart) in zip(st.columns(2), items[row:row + 2], strict=False):
                with col:
                    parts.chart(chart, key=f"chart_{name}")
        if split:
            st.caption(step_split.VIEW_CAPTION)

if timeline_tab.open:
    with timeline_tab, parts.drawn("The step timeline"):
        st.subheader("One step, launch by launch", anchor=timeline_view.TIMELINE_ANCHOR)
        timeline_view.timeline_section([run_id], {run_id: points}, lambda x: x.mode,
                                       key="timeline")

if points_tab.open:
    with points_tab:
        run_views.points_view(run_id, header, points)
if about.open:
    with about:
        run_views.environment_view(run_id, header, points)

# Under every view. The address bar is this view's share link (?view= and ?batch= follow
# the tabs and the picker); the copyable one is under Environment, since st.code's
# highlighter is a 1.5 MB script a first chart would wait for.
st.divider()
left, middle, right = st.columns([5, 3, 2])
left.page_link(frame.PAGES["import"], label="Download: bundle, CSV, HTML report, PNG charts",
               icon=":material/download:", query_params={"run": str(run_id)})
middle.page_link(frame.PAGES["compare"], label="Compare with other runs",
                 icon=":material/compare_arrows:", query_params={"run": str(run_id)})
with right:
    parts.delete_run_button(run_id)
