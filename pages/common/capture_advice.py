"""The Serve page's capture-size advice, as pure functions (no streamlit): read a pasted or
uploaded distribution, advise for an engine within a budget, lay out the comparison, and
chart a graph-memory run (MiB against the number of captured sizes, MiB added per size).
"""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from pages.common import chart_layout as layout
from runner.format import capture_dist as cdist
from runner.format import capture_sizes as cs
from runner.format import graph_memory as gm
from runner.format.capture_advisor import Advice, advise

WIDTH = 520


def curve_from_text(text: str | None, name: str = "uploaded curve") -> tuple[cs.Curve, dict | None]:
    """The shipped default, or a graph-memory document's curve (and the document)."""
    if not text:
        return cs.DEFAULT_CURVE, None
    try:
        doc = gm.read_doc(json.loads(text), name)
    except ValueError as e:  # json's own errors and GraphMemoryError alike
        raise gm.GraphMemoryError(f"{name}: {str(e).splitlines()[0]}") from None
    return gm.curve(doc, name), doc


def advise_text(text: str, engine: str, budget_mib: float, spec_tokens: int = 0,
                curve: cs.Curve = cs.DEFAULT_CURVE, where: str = "pasted text") -> Advice:
    dist = cdist.parse_text(text, "auto", where)
    rules = cs.EngineRules(engine, spec_tokens=int(spec_tokens))
    return advise(dist, rules, curve, int(budget_mib * cs.MIB))


def comparison_frame(a: Advice) -> pd.DataFrame:
    rows = []
    for name, p in (("proposed", a.proposed), (a.default_label, a.default)):
        rows.append({"List": name, "Graphs": len(p.sizes),
                     "Largest": p.sizes[-1] if p.sizes else None,
                     "Padding waste": f"{p.padding_waste:.1%}",
                     "Run without graphs": f"{p.graphless_share:.1%}",
                     "Pool MiB": round(p.pool_mib, 1), "Capture s": round(p.capture_s, 2)})
    return pd.DataFrame(rows)


def curve_charts(doc: dict) -> tuple[alt.Chart, alt.Chart]:
    """A graph-memory run: pool MiB after each capture, and what each capture added."""
    df = pd.DataFrame(gm.table_rows(doc))
    base = alt.Chart(df).encode(color=alt.Color("pool:N", title="Pool"))
    total = base.mark_line(point=True).encode(
        x=alt.X("graphs:Q", title="Captured sizes (largest first)"),
        y=alt.Y("pool_mib:Q", title="Pool MiB"),
        tooltip=["pool", "graphs", "batch_size", alt.Tooltip("pool_mib:Q", format=".1f")],
    ).properties(width=WIDTH, height=layout.HEIGHT)
    added = base.mark_bar().encode(
        x=alt.X("batch_size:O", title="Batch size captured", sort="descending"),
        xOffset="pool:N", y=alt.Y("marginal_mib:Q", title="MiB added"),
        tooltip=["pool", "batch_size", alt.Tooltip("marginal_mib:Q", format=".1f"),
                 alt.Tooltip("capture_s:Q", format=".3f")],
    ).properties(width=WIDTH, height=layout.HEIGHT)
    return total, added
