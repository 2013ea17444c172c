"""The train-step workload's chart on the Run page: reduce-overhead's one shared pool
beside the forward and backward graphs captured apart (pages/logic/workload_views.py's
train_pool_frame).
"""

from __future__ import annotations

import altair as alt
import pandas as pd


def train_pool_chart(pools: pd.DataFrame) -> alt.Chart:
    """Per batch size, the shared pool's bar beside the separate pools stacked."""
    return alt.Chart(pools).mark_bar().encode(
        x=alt.X("batch:O", title="batch size"), xOffset=alt.XOffset("how:N"),
        y=alt.Y("sum(MiB):Q", title="graph pool (MiB)"),
        color=alt.Color("part:N", title=None),
        tooltip=["batch:O", "how:N", "part:N", alt.Tooltip("MiB:Q", format=".1f")],
    ).properties(title="reduce-overhead: shared pool vs forward + backward apart",
                 height=260)
