"""The Runs board's logic, free of streamlit: each run's key figures (a sweep's read from
its summary, contract/run_summary.py: the key figure and its memory cost, each graph
mode's best speedup with its batch and graph pool, the break-even batch; a serve run's
best strategy; a graph-memory run's fixed MiB per capture), and whether a selection of
runs can be compared.

Key figures are numbers (NaN when unknown), so the table sorts them as numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from contract import memory
from contract.comparability import compare_rule, value_text
from contract.metrics import BYTES_PER_MIB
from contract.noise import noise_summary
from contract.run_summary import (
    BREAK_EVEN_GAIN,
    BREAK_EVEN_LABEL,
    MEMORY_COST_LABEL,
    NO_SPEEDUP,
    RunHeader,
    RunListing,
    RunSummary,
)
from contract.verdict import INCONCLUSIVE, SPREAD_LIMIT
from contract.vocab import CUDA_GRAPH_MODES, RUN_KIND_TABLE, RunKind
from pages.logic import text_width
from pages.logic.names import device_name
from pages.logic.plain import MAX_CELL, cut
from pages.logic.text_width import fit_px

MIB = BYTES_PER_MIB


def _col(mode: str, what: str) -> str:
    return f"{mode} {what}"


def key_columns() -> list[str]:
    """The numeric key-figure columns, in the order the board shows them."""
    cols = []
    for m in CUDA_GRAPH_MODES:
        cols += [_col(m, "x"), _col(m, "batch"), _col(m, "memory MiB")]
    return [*cols, BREAK_EVEN_LABEL]


KEY_HELP = {
    "created": "when the run started, in UTC (every stored time is UTC)",
    **{_col(m, "x"): f"{m}'s best speedup over eager: the point whose 95% interval's lower "
                     "bound is highest; empty where every point is inconclusive (its "
                     f"interval contains 1x and spans more than {SPREAD_LIMIT:g}x)"
       for m in CUDA_GRAPH_MODES},
    **{_col(m, "batch"): f"the batch size of {m}'s best speedup" for m in CUDA_GRAPH_MODES},
    **{_col(m, "memory MiB"): f"{m}'s {MEMORY_COST_LABEL} at its best point (MiB); empty "
                              "for a run measured before the isolated memory pass"
       for m in CUDA_GRAPH_MODES},
    BREAK_EVEN_LABEL: f"the batch size from which reduce-overhead gains less than "
                      f"{BREAK_EVEN_GAIN}x over compile (not over eager, as the speedups "
                      "are); empty: not reached or unknown",
    "key figure": "the run's best speedup over eager (any mode, ranked by its 95% lower "
                  "bound), its mode and batch",
    "memory cost": f"what the key figure's point costs: the {MEMORY_COST_LABEL}",
}


def key_format(column: str) -> str:
    """The number format of a key-figure column (streamlit's printf style)."""
    return "%.2fx" if column.endswith(" x") else "%+.1f" if column.endswith("MiB") else "%d"


NO_FIGURE = "—"  # an unknown figure in a table, as value_text shows an unknown value


def _sweep_row(summary: RunSummary | None) -> dict[str, object]:
    """A sweep's key figures as the board shows them, read from its summary: numbers
    (NaN when unknown) so the columns sort, and the key figure and its memory cost in the
    summary's own words."""
    row: dict[str, object] = {c: math.nan for c in key_columns()}
    if summary is None:  # a sweep the summaries did not cover: none of its figures known
        return {**row, "key figure": NO_SPEEDUP, "memory cost": ""}
    for b in summary.bests:
        if b.mode not in CUDA_GRAPH_MODES or b.verdict == INCONCLUSIVE:
            continue  # an inconclusive best is no number to sort or rank by
        row[_col(b.mode, "x")] = b.speedup
        row[_col(b.mode, "batch")] = b.batch_size
        cost = memory.memory_cost(b.point)
        row[_col(b.mode, "memory MiB")] = math.nan if cost is None else cost / BYTES_PER_MIB
    if summary.break_even_batch is not None:
        row[BREAK_EVEN_LABEL] = summary.break_even_batch
    row["key figure"] = summary.speedup_text()
    row["memory cost"] = summary.memory_text() or ""
    return row


def key_table(summaries: Sequence[RunSummary], names: Mapping[int, str]) -> pd.DataFrame:
    """One row per run, as its summary quotes it: the run's name (`names`, by id), its
    key figure and the memory cost it pays (Compare and Trends show it, the board and
    `runner list` the same words)."""
    return pd.DataFrame(
        [{"run": names.get(s.header.id, f"#{s.header.id}"), "key figure": s.speedup_text(),
          "memory cost": s.memory_text() or ""} for s in summaries],
        columns=["run", "key figure", "memory cost"])


def _serve_figure(results: pd.DataFrame) -> str:
    """A serve run's key figure: its best strategy by real rows/s, with p99 latency."""
    if results.empty:
        return "no strategy finished"
    ok = results[(results["status"] == "ok") & results["rows_per_s"].notna()]
    if ok.empty:
        return f"0/{len(results)} strategies ok"
    best = ok.loc[ok["rows_per_s"].idxmax()]
    p99 = best["latency_ms_p99"]
    tail = f", p99 {p99:.2f} ms" if p99 == p99 and p99 is not None else ""
    return f"best {best['strategy']}: {best['rows_per_s']:,.0f} rows/s{tail}"


def graph_memory_figure(a: Mapping[str, float]) -> str:
    """A graph-memory run's key figure: what each capture pays alone (the workspaces), and
    what all its sizes cost in one shared pool, as the engines capture them."""
    parts = []
    if "fixed_bytes_per_capture" in a:
        parts.append(f"{a['fixed_bytes_per_capture'] / MIB:,.1f} MiB fixed per capture")
    if "shared_total_bytes" in a:
        parts.append(f"{a.get('sizes', '?')} sizes in one pool: "
                     f"{a['shared_total_bytes'] / MIB:,.1f} MiB")
    return "; ".join(parts) or "no capture stored"


def _figures(r: RunListing, summaries: Mapping[int, RunSummary],
             by_serve: Mapping[int, pd.DataFrame], serve: pd.DataFrame,
             graph_memory: Mapping[int, Mapping[str, float]]) -> dict[str, object]:
    rid, kind = r.header.id, r.header.kind
    row: dict[str, object] = {c: math.nan for c in key_columns()}
    if _kind(kind).curves:
        row = _sweep_row(summaries.get(rid))
        row["points"] = points_text(r)
    elif kind == "serve":
        res = by_serve.get(rid, serve.iloc[0:0])
        row["key figure"], row["memory cost"] = _serve_figure(res), ""
        ok = int((res["status"] == "ok").sum()) if not res.empty else 0
        row["points"] = f"{ok}/{len(res)} strategies ok"
    elif kind == "graph-memory":
        a = graph_memory.get(rid, {})
        row["key figure"], row["memory cost"] = graph_memory_figure(a), ""
        row["points"] = f"{a.get('sizes', 0)} sizes captured"
    else:  # a kind without a figure of its own here: named, not left blank
        row["key figure"], row["memory cost"] = _kind(kind).noun, ""
        row["points"] = f"{r.points} points"
    return row


def _kind(name: str) -> RunKind:
    return RUN_KIND_TABLE.get(name) or RunKind(name, name, None, curves=False)


def key_figures(runs: Sequence[RunListing], summaries: Mapping[int, RunSummary],
                serve: pd.DataFrame | None = None,
                graph_memory: Mapping[int, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """Per run (index run_id): key_columns() as numbers, `key figure` as one line (a
    sweep's best speedup, its summary's; a serve run's best strategy), `memory cost` and
    `points` as text (ok points of a sweep, ok strategies of a serve run: never '0/0 ok').
    `summaries`: the sweeps' (queries.run_summaries), by run id."""
    serve = serve if serve is not None else pd.DataFrame(
        columns=["run_id", "strategy", "status", "rows_per_s", "latency_ms_p99"])
    by_serve = {int(k): g for k, g in serve.groupby("run_id")} if not serve.empty else {}
    rows = [{"run_id": r.header.id,
             **_figures(r, summaries, by_serve, serve, graph_memory or {})} for r in runs]
    cols = ["run_id", *key_columns(), "key figure", "memory cost", "points"]
    return pd.DataFrame(rows, columns=cols).set_index("run_id")


def board(runs: Sequence[RunListing], summaries: Mapping[int, RunSummary],
          serve: pd.DataFrame | None = None,
          graph_memory: Mapping[int, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """The Runs page's table: who and what first, then the key figures, then the rest
    (runs_table's columns)."""
    table = runs_table(runs)
    if table.empty:
        return table.reindex(columns=[*table.columns, *key_columns(), "key figure",
                                      "memory cost"])
    figs = key_figures(runs, summaries, serve, graph_memory)
    table = table.drop(columns=["points"]).join(figs, on="id")
    first = ["id", "GPU", "workload", "torch", "key figure", "memory cost", *key_columns()]
    return table[first + [c for c in table.columns if c not in first]]


def compare_refusal(selected: Sequence[RunHeader]) -> list[str]:
    """Why the selected runs cannot be compared; [] when they can. The rule is
    contract/comparability.py's compare_rule (Compare's own): runs that differ in
    workload are offered with a warning there, not refused here."""
    return compare_rule(selected)[0]


def compare_label(ids: Sequence[int], differ: Sequence[str]) -> str:
    """The board's link to Compare: 'Compare runs 1, 2', or, where the runs measure
    different things (compare_rule's warnings), '... anyway' with what differs."""
    label = f"Compare runs {', '.join(map(str, ids))}"
    if not differ:
        return label
    what = [line.removeprefix("Not comparable: ").split(" differ")[0] for line in differ]
    return f"{label} anyway ({', '.join(what)} differ)"


def points_text(run: RunListing) -> str:
    """A sweep's point counts: ok out of those that could run here, then the unsupported
    ones apart. "6/12 ok" read as failure on a CPU run whose other six points are graph
    modes that need CUDA; it reads "6/6 ok · 6 n/a on CPU"."""
    ok, total, unsupported = run.ok_points, run.points, run.unsupported_points
    text = f"{ok}/{total - unsupported} ok"
    if unsupported:
        text += (f" · {unsupported} n/a on CPU" if run.header.device == "cpu"
                 else f" · {unsupported} unsupported")
    return text


def known_params(params: object) -> object:
    """The workload parameters a run recorded a value for: the runner stores the ones a
    model took from its config as None ("heads=None"), which says nothing on the board."""
    if isinstance(params, Mapping):
        return {k: v for k, v in params.items() if v is not None}
    return params


def runs_table(runs: Sequence[RunListing]) -> pd.DataFrame:
    """The Runs page's table: one row per run, published runs marked, a noise badge
    (contract/noise.py's summary of its counts), a relative link to each run page
    (relative, so it works under any base URL)."""
    cols = ["id", "created", "source", "kind", "GPU", "torch", "workload", "parameters",
            "dtype", "status", "points", "noise", "label", "link"]
    rows = []
    for r in runs:
        h = r.header
        rows.append({
            "id": h.id, "created": f"{h.created_at:%Y-%m-%d %H:%M}" if h.created_at else "",
            "source": h.source, "kind": h.kind, "GPU": device_name(h),
            "torch": h.torch_version or "—", "workload": h.workload,
            "parameters": cut(value_text(known_params(h.workload_params)), MAX_CELL),
            "dtype": h.dtype or "—",
            "status": h.status, "points": f"{r.ok_points}/{r.points} ok",
            "noise": noise_summary(r.noise)[1] if _kind(h.kind).curves else "—",
            "label": h.label or "",
            # A kind's own page (its entry of the run-kind table): serve runs have theirs.
            "link": f"{_kind(h.kind).page}?run={h.id}"})
    return pd.DataFrame(rows, columns=cols)


# The board at 1280x800 with the sidebar open: the grid is 818 px inside its border, the
# row-selection boxes take 33 of it. Measured on the screenshots.
GRID_PX, SELECT_PX = 818, 33
MARGIN_PX = 14


def column_width(texts: Sequence[object], least: int, most: int) -> int:
    """Pixels that show the longest of `texts` whole (text_width.py), within [least,
    most]: a column as wide as what it holds, so a long GPU name is not cut."""
    return max(least, min(most, fit_px(texts)))


text_px = text_width.text_px


# The board's columns, a set at a time, each set within the grid at 1280 px (issue 46: the
# board's 22 columns ran 3,000 px past its edge). Every set starts with the run's id, the
# link to its page; a set's name says what it answers. torch is under How each ran: with
# it, a graph-memory run's key figure (60 characters) passed the grid's edge. What no
# grid column can show whole (the memory cost's sentence, the noise counts, the label,
# the parameters) is in the selected runs' details under the board (detail_table).
KEY_SET, MODES_SET, RAN_SET = "Key figures", "Graph modes' best", "How each ran"
COLUMN_SETS = {
    KEY_SET: ["link", "GPU", "workload", "key figure"],
    MODES_SET: ["link", *key_columns()],
    RAN_SET: ["link", "torch", "created", "source", "kind", "dtype", "status", "points"],
}
DETAIL_COLUMNS = ["id", "key figure", "memory cost", "noise", "label", "parameters"]


def column_labels(columns: Sequence[str]) -> dict[str, str]:
    """Each column's header where it is not the column's name: the link reads as the
    run's id; a graph mode's three figures sit under the mode's name, 'at batch' and
    'memory MiB' (their tooltips, KEY_HELP, say whose)."""
    out = {"link": "id"}
    for c in columns:
        for m in CUDA_GRAPH_MODES:
            if c == _col(m, "x"):
                out[c] = m
            elif c == _col(m, "batch"):
                out[c] = "at batch"
            elif c == _col(m, "memory MiB"):
                out[c] = "memory MiB"
    return out


def set_widths(table: pd.DataFrame, name: str) -> dict[str, int]:
    """The widths of one column set (COLUMN_SETS): each column as wide as its header and
    its widest cell (numbers as key_format writes them), so none is cut."""
    labels = column_labels(COLUMN_SETS[name])
    out = {}
    for c in COLUMN_SETS[name]:
        if c == "link":  # the id's digits, a link
            texts: list[object] = ["id", *table["id"]] if "id" in table else ["id"]
        elif c in key_columns():
            texts = [labels.get(c, c), *(key_format(c) % v for v in table[c].dropna())]
        else:
            texts = [labels.get(c, c), *table[c]] if c in table else [c]
        out[c] = fit_px(texts)
    return out


def detail_table(table: pd.DataFrame, ids: Sequence[int]) -> pd.DataFrame:
    """The selected runs' sentences, whole (a static table wraps them): the key figure
    and its memory cost, the noise counts, the label and the parameters."""
    rows = table[table["id"].isin(list(ids))]
    return rows[[c for c in DETAIL_COLUMNS if c in rows]].reset_index(drop=True)
