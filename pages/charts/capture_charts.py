"""A graph-memory run's two charts (pool MiB after each capture, MiB each capture added),
for the Serve page, the Run page and the HTML report; its tables are
pages/logic/capture_advice.py's.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from contract import graph_memory as gm
from pages.charts import layout
from pages.charts.encodings import padded


def curve_charts(doc: gm.GraphMemoryDoc) -> tuple[alt.Chart, alt.Chart]:
    """A graph-memory run: pool MiB after each capture, and what each capture added (laid
    out as every page chart is: the plot its own height, legend on top, nothing cut)."""
    df = pd.DataFrame(gm.table_rows(doc))
    base = alt.Chart(df).encode(color=alt.Color("pool:N", title="Pool",
                                                legend=layout.legend(entries=2)))
    total = base.mark_line(point=True).encode(
        x=alt.X("graphs:Q", title="Captured sizes (largest first)", scale=padded()),
        y=alt.Y("pool_mib:Q", title="Pool MiB"),
        tooltip=["pool", "graphs", "batch_size", alt.Tooltip("pool_mib:Q", format=".1f")],
    )
    added = base.mark_bar().encode(
        x=alt.X("batch_size:O", title="Batch size captured", sort="descending"),
        xOffset="pool:N", y=alt.Y("marginal_mib:Q", title="MiB added"),
        tooltip=["pool", "batch_size", alt.Tooltip("marginal_mib:Q", format=".1f"),
                 alt.Tooltip("capture_s:Q", format=".3f")],
    )
    return (layout.fitted(total, layout.chart_title("Graph pool", "MiB after each capture")),
            layout.fitted(added, layout.chart_title("Each capture's cost",
                                                    "MiB it added to its pool")))
