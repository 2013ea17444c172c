"""The Runs board's logic, free of streamlit: each run's key figures (best speedup per
graph mode with its batch and graph pool, the break-even batch; a serve run's best
strategy), and whether a selection of runs can be compared.

Key figures are numbers (NaN when unknown), so the table sorts them as numbers.
"""

from __future__ import annotations

import math

import pandas as pd

from pages.common import analysis
from runner.format.verdict import INCONCLUSIVE, SPREAD_LIMIT
from runner.format.vocab import CUDA_GRAPH_MODES

MIB = 1024 * 1024


def _col(mode: str, what: str) -> str:
    return f"{mode} {what}"


def key_columns() -> list[str]:
    """The numeric key-figure columns, in the order the board shows them."""
    cols = []
    for m in CUDA_GRAPH_MODES:
        cols += [_col(m, "x"), _col(m, "batch"), _col(m, "pool MiB")]
    return [*cols, "break-even batch"]


KEY_HELP = {
    **{_col(m, "x"): f"{m}'s best speedup over eager: the point whose 95% interval's lower "
                     "bound is highest; empty where every point is inconclusive (its "
                     f"interval contains 1x and spans more than {SPREAD_LIMIT:g}x)"
       for m in CUDA_GRAPH_MODES},
    **{_col(m, "batch"): f"the batch size of {m}'s best speedup" for m in CUDA_GRAPH_MODES},
    **{_col(m, "pool MiB"): f"graph pool {m} holds at its best point"
       for m in CUDA_GRAPH_MODES},
    "break-even batch": f"first batch from which reduce-overhead gains less than "
                        f"{analysis.BREAK_EVEN_GAIN}x over compile (empty: not reached or "
                        "unknown)",
}


def key_format(column: str) -> str:
    """The number format of a key-figure column (streamlit's printf style)."""
    return "%.2fx" if column.endswith(" x") else "%.1f" if column.endswith("MiB") else "%d"


def _sweep_figures(points: pd.DataFrame) -> tuple[dict, str]:
    """(numeric key figures, one line) of one sweep's points."""
    row: dict = {c: math.nan for c in key_columns()}
    best = analysis.largest_speedups(points)
    pool = {}
    if not points.empty and "graph_pool_bytes" in points:
        ok = analysis.usable(points)
        pool = {(m, int(b)): v for m, b, v in
                zip(ok["mode"], ok["batch_size"], pd.to_numeric(ok["graph_pool_bytes"]),
                    strict=True)}
    line = []
    for _, b in best.iterrows():
        if b["mode"] not in CUDA_GRAPH_MODES:
            continue
        if b["verdict"] == INCONCLUSIVE:  # not a finding: no number to sort or rank by
            line.append((-math.inf, f"{b['mode']} inconclusive"))
            continue
        batch = int(b["batch_size"])
        row[_col(b["mode"], "x")] = float(b["speedup"])
        row[_col(b["mode"], "batch")] = batch
        mib = pool.get((b["mode"], batch))
        row[_col(b["mode"], "pool MiB")] = mib / MIB if mib is not None and mib == mib \
            else math.nan
        line.append((float(b["speedup"]), f"{b['mode']} {float(b['speedup']):.2f}x at "
                                          f"batch {batch:,}"))
    be = analysis.break_even(points) if not points.empty else analysis.BreakEven("unknown")
    if be.status in ("crosses", "always-below"):
        row["break-even batch"] = be.batch_size
    text = max(line)[1] if line else "no graph mode measured"
    return row, text


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


def key_figures(runs: pd.DataFrame, points: pd.DataFrame,
                serve: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run (index run_id): key_columns() as numbers, `key figure` as one line (a
    sweep's best graph speedup; a serve run's best strategy) and `points` as text (ok
    points of a sweep, ok strategies of a serve run: never '0/0 ok')."""
    serve = serve if serve is not None else pd.DataFrame(
        columns=["run_id", "strategy", "status", "rows_per_s", "latency_ms_p99"])
    by_run = {int(k): g for k, g in points.groupby("run_id")} if not points.empty else {}
    by_serve = {int(k): g for k, g in serve.groupby("run_id")} if not serve.empty else {}
    rows = []
    for _, r in runs.iterrows():
        rid = int(r["id"])
        if r["kind"] == "serve":
            res = by_serve.get(rid, serve.iloc[0:0])
            row = {c: math.nan for c in key_columns()}
            row["key figure"] = _serve_figure(res)
            ok = int((res["status"] == "ok").sum()) if not res.empty else 0
            row["points"] = f"{ok}/{len(res)} strategies ok"
        else:
            pts = by_run.get(rid, points.iloc[0:0])
            row, text = _sweep_figures(pts)
            row["key figure"] = text
            row["points"] = points_text(r)
        rows.append({"run_id": rid, **row})
    cols = ["run_id", *key_columns(), "key figure", "points"]
    return pd.DataFrame(rows, columns=cols).set_index("run_id")


def board(runs: pd.DataFrame, points: pd.DataFrame,
          serve: pd.DataFrame | None = None) -> pd.DataFrame:
    """The Runs page's table: who and what first, then the key figures, then the rest
    (analysis.runs_table's columns)."""
    table = analysis.runs_table(runs)
    if table.empty:
        return table.reindex(columns=[*table.columns, *key_columns(), "key figure"])
    figs = key_figures(runs, points, serve)
    table = table.drop(columns=["points"]).join(figs, on="id")
    first = ["id", "GPU", "workload", "torch", "key figure", *key_columns()]
    return table[first + [c for c in table.columns if c not in first]]


def compare_refusal(selected: pd.DataFrame) -> list[str]:
    """Why the selected runs (rows of the runs frame) cannot be compared; [] when they
    can. Compare overlays sweeps of one model at one size and precision."""
    if len(selected) < 2:
        return []
    reasons = [f"Run {int(r['id'])} is a serve run: Compare overlays sweeps. Open it on "
               "the Serve page instead." for _, r in selected.iterrows()
               if r["kind"] == "serve"]
    if reasons:
        return reasons
    return [w.replace("Not comparable: ", "Cannot compare: ")
            for w in analysis.comparability(selected)]


def points_text(run) -> str:
    """A sweep's point counts: ok out of those that could run here, then the unsupported
    ones apart. "6/12 ok" read as failure on a CPU run whose other six points are graph
    modes that need CUDA; it reads "6/6 ok · 6 n/a on CPU"."""
    def n(key: str) -> int:
        v = run.get(key)
        return 0 if v is None or v != v else int(v)

    ok, total, unsupported = n("ok_points"), n("points"), n("unsupported_points")
    text = f"{ok}/{total - unsupported} ok"
    if unsupported:
        text += (f" · {unsupported} n/a on CPU" if run.get("device") == "cpu"
                 else f" · {unsupported} unsupported")
    return text
