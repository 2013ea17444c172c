"""The Runs board's logic, free of streamlit: each run's key figures (best speedup per
graph mode with its batch and graph pool, the break-even batch; a serve run's best
strategy; a graph-memory run's fixed MiB per capture), and whether a selection of runs
can be compared.

Key figures are numbers (NaN when unknown), so the table sorts them as numbers.
"""

from __future__ import annotations

import math

import pandas as pd

from pages.logic import analysis, comparing
from pages.logic.comparing import value_text
from pages.logic.names import device_name
from pages.logic.noise import NOISE_COUNT_COLUMNS, has_noise_counts, noise_summary
from runner.format.measurement import details_of
from runner.format.numbers import number_or_none as _num
from runner.format.verdict import RANKABLE, SPREAD_LIMIT
from runner.format.vocab import CUDA_GRAPH_MODES

MIB = 1024 * 1024
NO_GRAPH = "no graph mode measured"


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


def _break_even_batches(points: pd.DataFrame) -> dict[int, int]:
    """Per run: the break-even batch where it is "crosses" or "always-below", exactly as
    analysis.break_even decides it one run at a time, for every run in one pass."""
    ok = analysis.usable(points)
    ok = ok[ok["mode"].isin(("compile", "reduce-overhead"))]
    if ok.empty:
        return {}
    step = ok.pivot_table(index=["run_id", "batch_size"], columns="mode",
                          values="step_ms", aggfunc="first")
    if not {"compile", "reduce-overhead"} <= set(step.columns):
        return {}
    step = step.dropna(subset=["compile", "reduce-overhead"]).sort_index()
    ro = ok[ok["mode"] == "reduce-overhead"]
    # The paired per-round ratio where the runner measured it; else ratio of medians.
    paired = {}
    for rid, b, d in zip(ro["run_id"], ro["batch_size"], ro["details"], strict=True):
        vs = details_of(d).intervals.vs_compile
        if isinstance(vs, dict) and _num(vs.get("median")) is not None:
            paired[(int(rid), int(b))] = float(vs["median"])
    out: dict[int, int] = {}
    by_run: dict[int, list[tuple[int, float]]] = {}
    for (rid, b), c, r in zip(step.index, step["compile"], step["reduce-overhead"],
                              strict=True):
        key = (int(rid), int(b))
        by_run.setdefault(key[0], []).append((key[1], paired.get(key, float(c / r))))
    for rid, ratios in by_run.items():
        first_below = None
        for b, ratio in reversed(ratios):  # the tail of "below threshold" batches
            if ratio >= analysis.BREAK_EVEN_GAIN:
                break
            first_below = b
        if first_below is not None:
            out[rid] = first_below
    return out


def _sweep_table(points: pd.DataFrame) -> pd.DataFrame:
    """Per run (index run_id): key_columns() and `key figure`, for every run at once.

    The same figures analysis.largest_speedups and analysis.break_even give one run at a
    time (tests/test_board.py holds them equal), computed by column over all runs: one run
    at a time took 14.6 s for 1,000 runs on every rerun of the Runs page."""
    cols = [*key_columns(), "key figure"]
    if points.empty:
        return pd.DataFrame(columns=cols, index=pd.Index([], name="run_id"))
    sp = analysis.speedups(points)
    sp = sp[sp["mode"].isin(CUDA_GRAPH_MODES)]
    rows: dict[int, dict] = {}
    lines: dict[int, list] = {}
    if not sp.empty:
        sp = sp.assign(_rank=sp["speedup_ci_low"].where(sp["speedup_ci_low"].notna(),
                                                        sp["speedup"]))
        # idxmax takes the first of equal ranks, in speedups' order (run, mode, batch):
        # the batch largest_speedups picks.
        ranked = sp[sp["verdict"].isin(RANKABLE)]  # inconclusive points are never ranked
        best = ranked.loc[ranked.groupby(["run_id", "mode"])["_rank"].idxmax()]
        ok = analysis.usable(points)
        pool = dict(zip(zip(ok["run_id"].astype(int), ok["mode"], ok["batch_size"].astype(int),
                            strict=True),
                        pd.to_numeric(ok["graph_pool_bytes"]), strict=True)) \
            if "graph_pool_bytes" in ok else {}
        for rid, mode, batch, x in zip(best["run_id"].astype(int), best["mode"],
                                       best["batch_size"].astype(int),
                                       best["speedup"].astype(float), strict=True):
            row = rows.setdefault(rid, {c: math.nan for c in key_columns()})
            row[_col(mode, "x")] = x
            row[_col(mode, "batch")] = batch
            mib = pool.get((rid, mode, batch))
            row[_col(mode, "pool MiB")] = mib / MIB if mib is not None and mib == mib \
                else math.nan
            lines.setdefault(rid, []).append((x, f"{mode} {x:.2f}x at batch {batch:,}"))
        # A mode whose every point is inconclusive (runner/format/verdict.py) is not a
        # finding: no number to sort or rank by, only the word.
        left = sp.drop_duplicates(["run_id", "mode"]).set_index(["run_id", "mode"]).index \
            .difference(best.set_index(["run_id", "mode"]).index)
        for rid, mode in left:
            rows.setdefault(int(rid), {c: math.nan for c in key_columns()})
            lines.setdefault(int(rid), []).append((-math.inf, f"{mode} inconclusive"))
    for rid, batch in _break_even_batches(points).items():
        rows.setdefault(rid, {c: math.nan for c in key_columns()})["break-even batch"] = batch
    for rid, row in rows.items():
        row["key figure"] = max(lines[rid])[1] if rid in lines else NO_GRAPH
    table = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
    table.index.name = "run_id"
    return table


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


def graph_memory_figure(a: dict) -> str:
    """A graph-memory run's key figure: what each capture pays alone (the workspaces), and
    what all its sizes cost in one shared pool, as the engines capture them."""
    parts = []
    if "fixed_bytes_per_capture" in a:
        parts.append(f"{a['fixed_bytes_per_capture'] / MIB:,.1f} MiB fixed per capture")
    if "shared_total_bytes" in a:
        parts.append(f"{a.get('sizes', '?')} sizes in one pool: "
                     f"{a['shared_total_bytes'] / MIB:,.1f} MiB")
    return "; ".join(parts) or "no capture stored"


def key_figures(runs: pd.DataFrame, points: pd.DataFrame,
                serve: pd.DataFrame | None = None,
                graph_memory: dict[int, dict] | None = None) -> pd.DataFrame:
    """Per run (index run_id): key_columns() as numbers, `key figure` as one line (a
    sweep's best graph speedup; a serve run's best strategy) and `points` as text (ok
    points of a sweep, ok strategies of a serve run: never '0/0 ok')."""
    serve = serve if serve is not None else pd.DataFrame(
        columns=["run_id", "strategy", "status", "rows_per_s", "latency_ms_p99"])
    sweeps = _sweep_table(points)
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
        elif r["kind"] == "graph-memory":
            a = (graph_memory or {}).get(rid, {})
            row = {c: math.nan for c in key_columns()}
            row["key figure"] = graph_memory_figure(a)
            row["points"] = f"{a.get('sizes', 0)} sizes captured"
        else:
            row = (sweeps.loc[rid].to_dict() if rid in sweeps.index
                   else {**{c: math.nan for c in key_columns()}, "key figure": NO_GRAPH})
            row["points"] = points_text(r)
        rows.append({"run_id": rid, **row})
    cols = ["run_id", *key_columns(), "key figure", "points"]
    return pd.DataFrame(rows, columns=cols).set_index("run_id")


def board(runs: pd.DataFrame, points: pd.DataFrame, serve: pd.DataFrame | None = None,
          graph_memory: dict[int, dict] | None = None) -> pd.DataFrame:
    """The Runs page's table: who and what first, then the key figures, then the rest
    (runs_table's columns)."""
    table = runs_table(runs)
    if table.empty:
        return table.reindex(columns=[*table.columns, *key_columns(), "key figure"])
    figs = key_figures(runs, points, serve, graph_memory)
    table = table.drop(columns=["points"]).join(figs, on="id")
    first = ["id", "GPU", "workload", "torch", "key figure", *key_columns()]
    return table[first + [c for c in table.columns if c not in first]]


def compare_refusal(selected: pd.DataFrame) -> list[str]:
    """Why the selected runs (rows of the runs frame) cannot be compared; [] when they
    can. Compare overlays sweeps of one model at one size and precision."""
    if len(selected) < 2:
        return []
    where = {"serve": "on the Serve page", "graph-memory": "on its own page"}
    reasons = [f"Run {int(r['id'])} is a {r['kind']} run: Compare overlays sweeps. Open "
               f"it {where[r['kind']]} instead." for _, r in selected.iterrows()
               if r["kind"] in where]
    if reasons:
        return reasons
    return [w.replace("Not comparable: ", "Cannot compare: ")
            for w in comparing.comparability(selected)]


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


def runs_table(runs: pd.DataFrame, noise: pd.DataFrame | None = None) -> pd.DataFrame:
    """The Runs page's table: one row per run, published runs marked, a noise badge, a
    relative link to each run page (relative, so it works under any base URL).

    The badge reads the runs frame's noise counts (NOISE_COUNT_COLUMNS) where it has them,
    else `noise` (noise_counts' frame); without either it shows a dash."""
    cols = ["id", "created", "source", "kind", "GPU", "torch", "workload", "parameters",
            "dtype", "status", "points", "noise", "label", "link"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    if has_noise_counts(runs):
        noise = runs.set_index(runs["id"].astype(int))[list(NOISE_COUNT_COLUMNS)]
    badges = []
    for rid, kind in zip(runs["id"].astype(int), runs["kind"], strict=True):
        if kind != "sweep" or noise is None:
            badges.append("—")
        elif rid in noise.index:
            badges.append(noise_summary(noise.loc[rid])[1])
        else:
            badges.append(noise_summary({})[1])
    out = pd.DataFrame({
        "id": runs["id"].astype(int),
        "created": runs["created_at"].dt.strftime("%Y-%m-%d %H:%M"),
        "source": runs["source"],
        "kind": runs["kind"],
        "GPU": [device_name(r) for _, r in runs.iterrows()],
        "torch": runs["torch_version"].fillna("—"),
        "workload": runs["workload"],
        "parameters": runs["workload_params"].map(value_text),
        "dtype": runs["dtype"].fillna("—"),
        "status": runs["status"],
        "points": [f"{int(o)}/{int(p)} ok"
                   for o, p in zip(runs["ok_points"], runs["points"], strict=True)],
        "noise": badges,
        "label": runs["label"].fillna(""),
        # Serve runs (dynamic batch sizes) have their own page.
        "link": [f"{'serve' if k == 'serve' else 'run'}?run={int(i)}"
                 for i, k in zip(runs["id"], runs["kind"], strict=True)],
    })
    return out[cols].reset_index(drop=True)
