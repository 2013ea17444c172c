"""Run (/run?run=ID): the headline, the charts, every point (failures marked), the
environment, the reproducing command and a share link."""

import pandas as pd
import streamlit as st

from pages.common import analysis, charts, cost, links, report, ui, workload_views
from pages.common.plain import plain
from runner.format.bundle import ENVIRONMENT_FIELDS

ui.ensure_frame()

# --- settings: the run id comes from the URL only, so the link is the whole state --------
run_id = ui.run_id_from_url()

# --- load -------------------------------------------------------------------------------
headers = ui.headers([run_id])
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
points = ui.points([run_id])

# --- show -------------------------------------------------------------------------------
st.title(report.run_title(header, plain))
if header.get("label") and header.get("source") != "published":
    st.caption(plain(header["label"]))
ui.published_banner(header)
if header["status"] != "done":
    st.warning(f"Run status: **{plain(header['status'])}**: its points may be incomplete.")

st.subheader("Headline")
with ui.drawn('The headline'):
    if points.empty:
        st.info("This run has no points yet.")
    else:
        summary = cost.headline(points)
        if summary:
            st.markdown(f"#### {summary}")
        st.markdown("\n".join(f"- {line}" for line in report.headline(points)))
        counts = analysis.noise_counts(points)
        level, text = analysis.noise_summary(counts.iloc[0] if len(counts) else {})
        ui.noise_badge(level, text)
        cost = analysis.launch_cost(points)
        st.caption("Host launch cost (one trivial kernel launch, a property of the host, not "
                   "the GPU): " + (f"median {cost.text()} over {cost.points} points." if cost
                                  else "not measured in this run."))

with ui.drawn('The charts'):
    # Side by side in pairs, each chart stretched to its column; the time split is drawn
    # per mode below, so its one-chart form (for exports) is not built here.
    pairs = [("speedup", "step-time"), ("memory", "memory-tradeoff")]
    figures = charts.run_charts(points, names=[n for pair in pairs for n in pair])
    if not figures and not points.empty:
        st.info("No chart: no point of this run has a step time (every point failed, was "
                "skipped or is unsupported here; see the table below).")
    for pair in pairs:
        shown = [n for n in pair if n in figures]
        for col, name in zip(st.columns(len(shown)) if shown else [], shown, strict=True):
            with col:
                # A click on a speedup point opens its batch size's timeline below.
                (ui.chart_picking_batch if name == "speedup" else ui.chart)(
                    figures[name], key=f"chart_{name}")
    if "memory" in figures:
        st.caption("Memory held = graph pool + peak allocated: the pool a CUDA graph keeps "
                   "reserved is part of what a mode costs (an upper bound: tensors living in "
                   "the pool while the peak is taken count in both). Diamonds: the modes no "
                   "other mode beats on both speed and memory at that batch size.")
    split = charts.time_split_charts(analysis.time_split(points))
    if split:
        st.markdown("**Where the time goes**")
        for col, (name, chart) in zip(st.columns(len(split)), split.items(), strict=True):
            with col:
                ui.chart(chart, key=f"chart_{name}")

st.subheader("One step, launch by launch")
batch = None
with ui.drawn("The step timeline"):
    batch = ui.timeline_section([run_id], points, lambda x: x["mode"], key="timeline")

st.subheader("Speedup at a glance")
st.caption("Speedup over eager (95% interval where measured) · extra memory over eager's "
           "pool + peak, per batch size and mode.")
with ui.drawn("The speedup table"):
    st.dataframe(report.speedup_pivot(points), hide_index=True, key="speedup_pivot")

for section in workload_views.run_sections(header, points):
    st.subheader(section.title)
    st.caption(section.caption)
    if section.chart is not None:
        ui.chart(section.chart, key=f"workload_chart_{section.title}")
    st.dataframe(section.table, hide_index=True, key=f"workload_{section.title}")

st.subheader("Points")
with ui.drawn('The points table'):
    table = report.points_table(points)
    bad = int((~table["Status"].astype(str).str.startswith("ok")).sum()) if len(table) else 0
    if bad:
        st.caption(f"{bad} point(s) did not produce a measurement: marked in the Status column "
                   "with their message.")
    st.dataframe(table, hide_index=True, key="points_table",
                 column_config={"Status": st.column_config.TextColumn(width="medium")})
st.caption(report.RESERVED_NOTE)

left, right = st.columns(2)
with left:
    st.subheader("Environment")
    env = pd.DataFrame({"field": list(ENVIRONMENT_FIELDS),
                        "value": ["—" if header.get(f) is None else str(header[f])
                                  for f in ENVIRONMENT_FIELDS]})
    st.dataframe(env, hide_index=True, key="env_table")
with right:
    st.subheader("Reproduce")
    with ui.drawn("The command"):
        offer = links.reproduce(header, points["batch_size"].tolist(),
                                points["mode"].tolist())
        if offer.note:
            st.caption(plain(offer.note))
        if offer.command:  # st.code: a copy button; only for a catalog workload's sweep
            st.code(offer.command, language="bash", wrap_lines=True)
    st.subheader("Share")
    ui.share_link(links.run_url(ui.app_url(), run_id, batch))
    st.page_link(ui.PAGES["import"], label="Download: bundle, CSV, HTML report, PNG charts",
                 icon=":material/download:", query_params={"run": run_id})
    st.page_link(ui.PAGES["compare"], label="Compare with other runs",
                 icon=":material/compare_arrows:", query_params={"run": run_id})
    ui.delete_run_button(run_id)
