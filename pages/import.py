"""Import / export (/import): upload bundle files; download any run as a bundle, as CSV,
as a self-contained HTML report, and its charts as PNG. ?run=ID preselects the run."""

from functools import partial

import streamlit as st

from contract import bundle as fmt
from pages.charts import capture_charts, report, run_charts
from pages.logic import capture_advice as ca
from pages.logic import links, points_table, timeline, uploads
from pages.logic.names import run_choice
from pages.logic.plain import plain
from pages.widgets import data, frame, parts, url

frame.ensure_frame()

st.title("Import and export")

# --- import -----------------------------------------------------------------------------
st.subheader("Import bundles")
if data.read_only():
    st.info("Read-only share mode: importing is disabled on this deployment.",
            icon=":material/lock:")
else:
    files = st.file_uploader(
        "Bundle files (.json from `python -m runner sweep --out` or `export`)",
        accept_multiple_files=True, max_upload_size=uploads.MAX_UPLOAD_MB, key="uploads")
    # In words, not only the uploader's red mark: a larger file is refused in the browser.
    st.caption(f"A file over the {uploads.MAX_UPLOAD_MB} MB limit is refused; export a run "
               "per file, or import a large one with `python -m runner import FILE.json`.")
    if files and st.button(f"Import {len(files)} file(s)", type="primary", key="do_import"):
        try:
            results = data.import_uploads(data.engine(), [(f.name, f.getvalue())
                                                         for f in files])
        except data.ReadOnlyError as e:
            results = []
            st.error(str(e))
        for r in results:
            if r.ok:  # imported now: as run r.run_id (uploads.import_each)
                st.success(plain(r.message))
                st.page_link(frame.PAGES["run"], label=f"Open run {r.run_id}",
                             icon=":material/monitoring:", query_params={"run": str(r.run_id)})
            elif r.run_id is not None:
                st.info(plain(r.message))
            else:
                st.error(plain(r.message))

# --- export: settings -------------------------------------------------------------------
st.subheader("Export a run")
runs = data.runs()
if not runs:
    st.info("No runs to export yet.")
    st.stop()
names = {r.header.id: run_choice(r.header) for r in runs}
asked = st.query_params.get_all("run")
start: int | None = None
if asked:
    try:
        start = links.parse_run_id(asked[0])
        if start not in names:
            st.warning(plain(links.missing_runs([start], names)[0]))
            start = None
    except links.LinkError as e:
        st.warning(plain(e))
run_id = st.selectbox("Run", list(names), format_func=lambda i: names[i], key="export_run",
                      index=list(names).index(start) if start else 0)
st.query_params["run"] = str(run_id)

# --- export: load -----------------------------------------------------------------------
found = data.header(run_id)
if found is None:  # deleted since the picker was drawn
    st.warning(plain(links.missing_runs([run_id], [])[0]))
    st.stop()
header = found  # a RunHeader, never None, in the functions below too
points = data.run_points(run_id)
stem = f"launchbench-run-{run_id}"
app_url = url.app_url()
# A graph-memory run has captures, not points: its table and its two curve charts instead.
captured = data.graph_memory_doc(run_id) if header.kind == "graph-memory" else None


def bundle_text() -> str:
    # Deferred: built when the button is clicked, not on every rerun.
    try:
        return fmt.dumps(data.export_bundle(run_id))
    except data.RunNotFound as e:
        return str(e)


def report_html() -> str:
    summary = data.summary(run_id)  # the figures every page quotes, the same here
    if captured is not None:
        return report.graph_memory_report(
            header, captured, links.report_origin(app_url, run_id), summary)
    batch = timeline.headline_batch(points)  # its step timeline goes into the report
    return report.html_report(header, points, links.report_origin(app_url, run_id, batch),
                              data.traces([run_id], batch) if batch else [], summary)

# --- export: show -----------------------------------------------------------------------
parts.published_banner(header)
c1, c2, c3 = st.columns(3)
c1.download_button("Bundle (.json)", bundle_text, f"{stem}.json", "application/json",
                   key="dl_bundle", on_click="ignore")
c2.download_button("Captures (.csv)" if captured else "Points (.csv)",
                   points_table.csv_text(ca.captures_frame(captured)) if captured
                   else points_table.points_csv(run_id, points), f"{stem}.csv", "text/csv",
                   key="dl_csv",
                   on_click="ignore")
c3.download_button("Report (.html, opens offline)", report_html, f"{stem}.html",
                   "text/html", key="dl_html", on_click="ignore")
PNG_PER_ROW = 4
figures = (dict(zip(("graph-memory-total", "graph-memory-added"),
                   capture_charts.curve_charts(captured), strict=True)) if captured
           else run_charts.run_charts(points))
if figures:
    st.caption("Charts as PNG:")
    # Four a row: seven in one row cut 'energy-above-idle.png' to 77 px.
    items = list(figures.items())
    for row in range(0, len(items), PNG_PER_ROW):
        for col, (name, chart) in zip(st.columns(PNG_PER_ROW), items[row:row + PNG_PER_ROW],
                                      strict=False):
            col.download_button(f"{name}.png", partial(report.chart_png, chart),
                                f"{stem}-{name}.png", "image/png", key=f"dl_png_{name}",
                                on_click="ignore")
else:
    st.caption("This run has no chart to export (no ok point).")
