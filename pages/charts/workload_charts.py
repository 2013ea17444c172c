"""The workloads' own charts on the Run page: train-step's, reduce-overhead's one shared
pool beside the forward and backward graphs captured apart (pages/logic/workload_views.py's
train_pool_frame); kernel-chain's published per-kernel times (the V100 blog's), where a
run gives no step to draw a speedup from.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from contract.measurement import Measurement
from pages.charts.encodings import mode_color
from pages.charts.layout import LABEL_LIMIT, chart_title, fitted, legend
from pages.logic import run_text


def train_pool_chart(pools: pd.DataFrame) -> alt.Chart:
    """Per batch size, the shared pool's bar beside the separate pools stacked. Fitted as
    every chart (layout.fitted): a total height of 260 px left its plot 134 px and its
    title and y title cut."""
    parts = list(dict.fromkeys(pools["part"]))
    return fitted(alt.Chart(pools).mark_bar().encode(
        x=alt.X("batch:O", title="batch size", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("how:N"),
        y=alt.Y("sum(MiB):Q", title="graph pool (MiB)"),
        color=alt.Color("part:N", title=None,
                        legend=legend("top", entries=len(parts), labels=parts)),
        tooltip=["batch:O", "how:N", "part:N", alt.Tooltip("MiB:Q", format=".1f")],
    ), chart_title("reduce-overhead: shared pool vs forward + backward apart"))


# A plot's least height (tests/e2e/test_chart_room.py's rule): two bars in 120 px read
# as a sliver beside the page's other charts.
MIN_PLOT_PX = 150


def per_kernel_chart(points: Sequence[Measurement]) -> alt.LayerChart | None:
    """A published kernel-chain run's per-kernel times (run_text.per_kernel_figures), a
    bar each, labelled with its figure: such a run gives no step, so it has no speedup or
    step-time chart, and its own figures are what the Speed view shows. None elsewhere."""
    found = run_text.per_kernel_figures(points)
    if not found:
        return None
    df = pd.DataFrame([{"what": w, "us": us, "mode": w.split(" ")[0]} for w, us in found],
                      columns=["what", "us", "mode"])
    y = alt.Y("what:N", title=None, sort=[w for w, _ in found],
              axis=alt.Axis(labelLimit=LABEL_LIMIT))
    # Room past the longest bar for its figure (9.6 at a domain's nice end of 10 was
    # drawn past the plot's edge).
    x = alt.X("us:Q", title="Time per kernel (us)",
              scale=alt.Scale(domain=[0, max(us for _, us in found) * 1.2], nice=True))
    bars = alt.Chart().mark_bar(height=22).encode(
        x=x, y=y, color=mode_color(df["mode"], legend_on=False),
        tooltip=[alt.Tooltip("what:N", title="What"),
                 alt.Tooltip("us:Q", title="us per kernel", format=".1f")])
    text = alt.Chart().mark_text(align="left", dx=4).encode(
        x=x, y=y, text=alt.Text("us:Q", format=".1f"))
    return fitted(alt.layer(bars, text, data=df), chart_title(
        "Time per kernel, as published", "no step times: per-kernel figures only"),
        height=max(40 * len(found), MIN_PLOT_PX))
