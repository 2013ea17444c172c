"""The Serve page's capture-size advice, as pure functions: read a pasted or uploaded
distribution, advise for an engine within a budget, lay out the comparison, and a
graph-memory run's captures and attribution as tables (the Serve page, the Run page and
the HTML report; its charts are pages/charts/capture_charts.py's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

import pandas as pd

from contract import bundle as fmt
from contract import capture_dist as cdist
from contract import capture_sizes as cs
from contract import graph_memory as gm
from contract.capture_advisor import Advice, advise
from contract.numbers import is_missing
from pages.logic.names import device_name


def curve_from_text(text: str | None, name: str = "uploaded curve"
                    ) -> tuple[cs.Curve, gm.GraphMemoryDoc | None]:
    """The shipped default, or a graph-memory document's curve (and the document)."""
    if not text:
        return cs.DEFAULT_CURVE, None
    try:
        # graph-memory --out's bundle, or the older document; a key given twice refused
        doc = fmt.graph_memory_doc(json.loads(text, object_pairs_hook=fmt.unique_keys), name)
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


BUILT_IN = None  # the curve picker's first option: cs.DEFAULT_CURVE


def curve_choices(runs: pd.DataFrame) -> dict[int | None, str]:
    """The curve picker's options: the built-in curve, then each stored graph-memory run
    (db.graph_memory.graph_memory_runs), newest first."""
    out: dict[int | None, str] = {BUILT_IN: f"Built-in: {cs.DEFAULT_CURVE.source}"}
    for r in runs.itertuples():
        out[int(r.id)] = (f"#{r.id} {r.workload} on {device_name(r)}, "
                          f"{r.created_at:%Y-%m-%d %H:%M} UTC"
                          + ("" if is_missing(r.label) or not r.label else f", {r.label}"))
    return out


# Said under advice priced by the built-in curve: whose curve it is (issue 38).
BORROWED = ("Curve borrowed: the built-in one is a tiny model's (H200 mlp, fp32); pick a "
            "stored graph-memory run of your model, or upload one (python -m runner "
            "graph-memory --workload NAME).")


def attribution_frame(doc: gm.GraphMemoryDoc) -> pd.DataFrame:
    """What the run's series say, one figure a row, in MiB and seconds."""
    # Every figure of an Attribution is a number (int or float): read here by name.
    a = cast("Mapping[str, float]", doc["attribution"])
    names = (("fixed_bytes_per_capture", "Fixed part per capture (workspaces)", "MiB"),
             ("per_row_bytes", "Per batch row (activations)", "KiB"),
             ("shared_first_bytes", "Shared pool after the first (largest) capture", "MiB"),
             ("shared_total_bytes", "Shared pool after every size", "MiB"),
             ("shared_per_graph_bytes", "Device memory per further graph, shared pool",
              "MiB"),
             ("private_total_bytes", "Private pools, every size", "MiB"),
             ("shared_saves_bytes", "One shared pool saves", "MiB"),
             ("first_capture_s", "First capture", "s"), ("capture_s", "Each further capture",
                                                          "s"))
    scale = {"MiB": 2**20, "KiB": 2**10, "s": 1}
    rows = [{"Figure": label, "Value": round(a[k] / scale[unit], 3), "Unit": unit}
            for k, label, unit in names if k in a]
    return pd.DataFrame(rows, columns=["Figure", "Value", "Unit"])


def captures_frame(doc: gm.GraphMemoryDoc) -> pd.DataFrame:
    """Every capture, in the order taken: the table under the charts."""
    df = pd.DataFrame(gm.table_rows(doc))
    out = pd.DataFrame({"Pool": df["pool"], "Graphs": df["graphs"],
                        "Batch size": df["batch_size"],
                        "Pool MiB": df["pool_mib"].round(1),
                        "Added MiB": df["marginal_mib"].round(1),
                        "Device MiB": df["device_mib"].round(1),
                        "Capture s": df["capture_s"].round(3)})
    return out
