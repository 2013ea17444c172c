"""Serve runs' charts: memory against throughput per strategy, padding waste per request,
latency over the replay; one colour and shape per strategy. The tables they draw are
pages/logic/serve_tables.py's.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from pages.charts import layout
from pages.charts.encodings import MODE_COLORS, padded
from pages.logic.serve_tables import MIB, kind_of, records

WIDTH, HEIGHT = 520, layout.HEIGHT
# The run pages' mode colours (pages.charts.run_charts.MODE_COLORS): bucket strategies replay
# manually captured CUDA graphs, so they take cuda-graph's colour; several bucket
# strategies are told apart by their shape or dash, named in the legend.
KIND_COLORS = {k: MODE_COLORS[k] for k in ("eager", "compile", "reduce-overhead")} | {
    "buckets": MODE_COLORS["cuda-graph"]}


# A second, third... bucket strategy needs its own colour (two greens read as one): hues
# no mode uses.
EXTRA_BUCKET_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]
STRATEGY_SHAPES = {"eager": "cross", "compile": "square", "reduce-overhead": "triangle-up"}
BUCKET_SHAPES = ["circle", "diamond", "triangle-down", "wedge", "stroke"]


def strategy_styles(strategies) -> tuple[list[str], list[str], list[str]]:
    """(strategies in legend order, a colour each, a shape each): the modes in their mode
    colours, bucket strategies cuda-graph's green first and then hues of their own, every
    one its own shape, so the legend tells each strategy apart by colour and by mark."""
    names = list(dict.fromkeys(str(x) for x in strategies))
    modes = [m for m in KIND_COLORS if m in names and m != "buckets"]
    others = sorted(n for n in names if n not in modes)
    bucket_colors = [KIND_COLORS["buckets"], *EXTRA_BUCKET_COLORS]
    colors = [KIND_COLORS[m] for m in modes] + [bucket_colors[i % len(bucket_colors)]
                                                for i in range(len(others))]
    shapes = [STRATEGY_SHAPES[m] for m in modes] + [BUCKET_SHAPES[i % len(BUCKET_SHAPES)]
                                                    for i in range(len(others))]
    return modes + others, colors, shapes


def _strategy_encodings(strategies, orient: layout.Orient = "top") -> dict:
    """Colour and shape both on the strategy, with one legend: the shapes' legend alone
    drew every symbol black."""
    order, colors, shapes = strategy_styles(strategies)
    leg = layout.legend(orient, entries=len(order))
    return {"color": alt.Color("strategy:N", title="Strategy", sort=order, legend=leg,
                               scale=alt.Scale(domain=order, range=colors)),
            "shape": alt.Shape("strategy:N", title="Strategy", sort=order, legend=leg,
                               scale=alt.Scale(domain=order, range=shapes))}


OUTCOMES = {"exact": "#2ca02c", "padded": "#ff7f0e", "eager fallback": "#d62728"}


def memory_throughput_chart(results: pd.DataFrame) -> alt.Chart | None:
    """Graph pool against real rows/s, one point per strategy: up and left is better."""
    pooled = [(r, r.graph_pool_bytes) for r in records(results) if r.status == "ok"
              and r.rows_per_s and r.graph_pool_bytes is not None]
    if not pooled:
        return None
    rows = [r for r, _ in pooled]
    df = pd.DataFrame({"strategy": [r.strategy for r in rows],
                       "kind": [r.kind for r in rows],
                       "pool_mib": [pool / MIB for _, pool in pooled],
                       "rows_per_s": [r.rows_per_s for r in rows],
                       "graphs": [r.graphs for r in rows]})
    # Strategies are named by shape in the legend, not by text beside the points: points
    # close together (eager and compile both at 0 MiB) made the labels overlap.
    chart = alt.Chart(df).mark_point(size=110, filled=True, opacity=0.9).encode(
        x=alt.X("pool_mib:Q", title="Graph pool (MiB)", scale=padded()),
        y=alt.Y("rows_per_s:Q", title="Throughput (real rows/s)"),
        **_strategy_encodings(df["strategy"]),
        tooltip=["strategy:N", alt.Tooltip("pool_mib:Q", format=",.1f", title="Pool MiB"),
                 alt.Tooltip("rows_per_s:Q", format=",.0f", title="Rows/s"), "graphs:Q"],
    )
    return layout.fitted(chart, layout.chart_title("Memory against throughput",
                                                   "up and left is better"), height=HEIGHT)


def waste_charts(waste: pd.DataFrame) -> dict[str, alt.Chart]:
    """waste_chart per bucket strategy, one chart each (a page stretches each to its width;
    a row facet keeps a fixed width and cut its row labels)."""
    if waste.empty:
        return {}
    # Each strategy's rows are there (its name is read from them): never an empty chart.
    return {name: chart for name in dict.fromkeys(waste["strategy"])
            if (chart := waste_chart(waste[waste["strategy"] == name], name)) is not None}


def waste_chart(waste: pd.DataFrame, strategy: str | None = None) -> alt.Chart | None:
    """Requests per batch size, coloured by what happened to them (exact bucket, padded,
    eager fallback), lighter where more rows were wasted; one strategy's, or every bucket
    strategy's in rows (exports)."""
    if waste.empty:
        return None
    chart = alt.Chart(waste).mark_bar().encode(
        x=alt.X("batch_size:O", title="Batch size", axis=alt.Axis(labelOverlap=True)),
        y=alt.Y("requests:Q", title="Requests"),
        color=alt.Color("outcome:N", title="Request", scale=alt.Scale(
            domain=list(OUTCOMES), range=list(OUTCOMES.values())),
            legend=layout.legend("top", entries=len(OUTCOMES))),
        opacity=alt.Opacity("wasted_fraction:Q", title="Rows wasted (lighter: more)",
                            scale=alt.Scale(domain=[0, 1], range=[1, 0.35]),
                            # Shown on a padded bar's orange: in black the swatches
                            # read as greys that match no bar.
                            legend=layout.legend("bottom", entries=3, format=".0%",
                                                 values=[0, 0.5, 1], symbolType="square",
                                                 symbolFillColor=OUTCOMES["padded"],
                                                 symbolStrokeColor=OUTCOMES["padded"])),
        tooltip=["batch_size:Q", "bucket:Q", "outcome:N", "requests:Q",
                 alt.Tooltip("wasted_fraction:Q", format=".0%", title="Rows wasted"),
                 alt.Tooltip("padding_waste:Q", format=".0%", title="Extra rows")],
    )
    if strategy is None:
        return chart.encode(row=alt.Row("strategy:N", title=None)).properties(
            width=WIDTH, height=layout.HEIGHT // 2, title="Padding and fallback by batch size")
    return layout.fitted(chart, layout.chart_title(f"{strategy}: padding and fallback",
                                                   "requests per batch size"),
                         height=layout.HEIGHT - 40)


def latency_chart(requests: pd.DataFrame) -> alt.Chart | None:
    """Median measured latency per batch size, one line per strategy."""
    if requests.empty:
        return None
    med = requests.groupby(["strategy", "batch_size"], as_index=False)["latency_ms"].median()
    med["kind"] = med["strategy"].map(kind_of)
    enc = _strategy_encodings(med["strategy"])
    tips = ["strategy:N", "batch_size:Q", alt.Tooltip("latency_ms:Q", format=".3f", title="ms")]
    x = alt.X("batch_size:Q", title="Batch size")
    y = alt.Y("latency_ms:Q", title="Median latency (ms)")
    base = alt.Chart(med)
    lines = base.mark_line(opacity=0.7).encode(x=x, y=y, color=enc["color"],
                                               detail="strategy:N")
    points = base.mark_point(filled=True, size=30).encode(x=x, y=y, tooltip=tips, **enc)
    return layout.fitted(lines + points, layout.chart_title(
        "Latency by batch size", "median of the measured requests"), height=HEIGHT)


# --- the advisor -------------------------------------------------------------------------


# --- the worked example ------------------------------------------------------------------


