"""The Run page of a graph-memory run (`runner graph-memory`): its two curves, what its
series attribute, every capture, and where to price capture lists with it."""

from __future__ import annotations

import streamlit as st

from contract.run_summary import RunHeader
from pages.charts import capture_charts, report
from pages.logic import capture_advice as ca
from pages.logic import points_table, run_text
from pages.logic.plain import plain
from pages.widgets import data, frame, parts


def show(run_id: int, header: RunHeader) -> None:
    """A graph-memory run: its two charts, what its series attribute, every capture."""
    found = data.summary(run_id)  # None: deleted since the header was read (then no doc)
    titled = found.header if found is not None else header
    st.title(run_text.run_title(titled, plain) + " · graph memory")
    if header.label:
        st.caption(plain(header.label))
    try:
        doc = data.graph_memory_doc(run_id)
    except LookupError as e:  # deleted since the header was read
        st.error(plain(str(e)))
        return
    figures = enumerate(capture_charts.curve_charts(doc))
    for col, (i, figure) in zip(st.columns(2), figures, strict=True):
        with col:
            parts.chart(figure, key=f"gm_chart_{i}")
    st.caption(report.GRAPH_MEMORY_NOTE)
    # Drawn whole: a pool's 18-20 captures sat in a 400 px scroll box.
    for key, table in (("gm_attribution", ca.attribution_frame(doc)),
                       ("gm_captures", ca.captures_frame(doc))):
        st.dataframe(table, hide_index=True, key=key,
                     height=points_table.shown_height(len(table)))
    if frame.has_page("serve"):
        st.page_link(frame.PAGES["serve"], label="Price capture lists with this curve (Serve "
                     "page)", icon=":material/dynamic_feed:", query_params={"curve": str(run_id)})
    st.caption(f"On the command line: python -m runner advise-capture --from FILE "
               f"--engine vllm --budget-mib N --curve {run_id}")
    left, right = st.columns([4, 1])
    left.page_link(frame.PAGES["import"], label="Download: bundle, captures CSV, HTML report",
                   icon=":material/download:", query_params={"run": str(run_id)})
    with right:
        parts.delete_run_button(run_id)
