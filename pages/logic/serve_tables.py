"""Serve runs in tables and words: the strategies' summary, padding waste per request,
the per-size profile, the bucket advisor's comparison and the worked 8/16/32 example, as
pure functions of the frames db/serve.py returns. The charts are
pages/charts/serve_charts.py's.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from contract import advisor, buckets
from contract.serve_record import ServeProfilePoint, ServeResult
from pages.logic.metrics import MISSING

MIB = 2**20


def kind_of(strategy: str) -> str:
    """'buckets:8/16/32' -> 'buckets'; 'eager' -> 'eager'."""
    return str(strategy).split(":", 1)[0]


def _v(x: Any) -> Any:
    """NaN/NaT (what pandas makes of SQL NULL) back to None: unknown stays unknown."""
    if x is None or isinstance(x, (list, dict, tuple)):
        return x
    try:
        return None if pd.isna(x) else x
    except (TypeError, ValueError):
        return x


def _fmt(x: Any, f: str) -> str:
    x = _v(x)
    return MISSING if x is None else f.format(x)


def records(df: pd.DataFrame) -> list[ServeResult]:
    """db/serve.py serve_results' rows as records (SQL NULL, NaN in a frame: None)."""
    return [ServeResult.from_json({k: _v(v) for k, v in row.items()})
            for row in df.to_dict("records")]


def profile_records(df: pd.DataFrame) -> list[ServeProfilePoint]:
    """db/serve.py serve_profile's rows as records."""
    return [ServeProfilePoint.from_json({k: _v(v) for k, v in row.items()})
            for row in df.to_dict("records")]


def summary_table(results: pd.DataFrame) -> pd.DataFrame:
    rows = []
    energy = any(r.energy_mj_per_request is not None for r in records(results))
    for r in records(results):
        rows.append({
            "Strategy": r.strategy, "Status": r.status, "Ran as": r.execution or MISSING,
            "Requests/s": _fmt(r.requests_per_s, "{:,.0f}"),
            "Rows/s": _fmt(r.rows_per_s, "{:,.0f}"),
            "p50 ms": _fmt(r.latency_ms_p50, "{:.3f}"),
            "p99 ms": _fmt(r.latency_ms_p99, "{:.3f}"),
            "Padding waste": _fmt(r.padding_waste, "{:.0%}"),
            "Hit": _fmt(r.hit_rate, "{:.0%}"), "Fallback": _fmt(r.fallback_rate, "{:.0%}"),
            "Graphs": _fmt(r.graphs, "{:.0f}"),
            "Pool MiB": _fmt(None if r.graph_pool_bytes is None
                             else r.graph_pool_bytes / MIB, "{:,.1f}"),
            "Setup s": _fmt(r.setup_s, "{:.2f}"),
            # Only where some strategy has the figure: a column of dashes says nothing.
            **({"mJ/request": _fmt(r.energy_mj_per_request, "{:.3f}")} if energy else {}),
            "Matches eager": _fmt(r.correct, "{}"), "Note": r.message or r.note})
    return pd.DataFrame(rows)


def waste_frame(stream: list[int], results: pd.DataFrame) -> pd.DataFrame:
    """Per bucket strategy and distinct batch size: its bucket, the waste, fallback, and
    how many requests of the stream had that size."""
    counts = pd.Series(stream).value_counts()
    rows = []
    for r in records(results):
        if r.kind != "buckets":
            continue
        for w in buckets.waste_by_batch(stream, r.buckets):
            outcome = ("eager fallback" if w["fallback"] else
                       "exact" if w["bucket"] == w["batch_size"] else "padded")
            rows.append({"strategy": r.strategy, **w, "outcome": outcome,
                         "requests": int(counts[w["batch_size"]])})
    return pd.DataFrame(rows)


def profile_points(profile: pd.DataFrame,
                   eager_ms: dict[int, float] | None = None) -> list[advisor.ProfilePoint]:
    """The run's profile as the advisor's input; `eager_ms` (per size) replaces the
    profile's eager figure where given, and adds eager-only points for other sizes."""
    eager = dict(eager_ms or {})
    pts = [advisor.ProfilePoint(int(p.batch_size), p.bucket_ms,
                                eager.pop(int(p.batch_size), p.eager_ms),
                                None if p.pool_bytes is None else int(p.pool_bytes),
                                None if p.pool_extra_bytes is None else int(p.pool_extra_bytes))
           for p in profile_records(profile)]
    return pts + [advisor.ProfilePoint(b, None, t) for b, t in sorted(eager.items())]


def eager_from_replay(requests: pd.DataFrame) -> dict[int, float]:
    """Median latency per batch size of the run's eager replay. Eager is host-bound, and
    on the H200's slow host it ran 40% slower in the profile (first, alone per size) than
    in the replay: the replay is the same condition as the strategies it is compared to."""
    eager = requests[requests["strategy"] == "eager"]
    return {int(b): float(t) for b, t in eager.groupby("batch_size")["latency_ms"].median()
            .items()}


def params_text(params: object) -> str:
    """A serve run's workload parameters as the other pages write them: 'depth=32,
    width=256, dtype=float32' (the given ones, in their stored order), not a dict."""
    if isinstance(params, dict):
        return ", ".join(f"{k}={v}" for k, v in params.items() if v is not None)
    return "" if params is None else str(params)


def budget_bounds(profile: pd.DataFrame) -> tuple[int, int, int] | None:
    """(min, max, default) memory budget in whole MiB for the slider; None when the
    profile has no pool sizes (a CPU run)."""
    pools = [(p.pool_bytes, p.pool_extra_bytes) for p in profile_points(profile)
             if p.pool_bytes is not None and p.pool_extra_bytes is not None]
    if not pools:
        return None
    top = max(alone for alone, _ in pools) + sum(extra for _, extra in pools)
    hi = max(1, math.ceil(top / MIB))
    return 0, hi, max(1, math.ceil(max(alone for alone, _ in pools) / MIB))


# The advice table's columns: every figure is the model's unless it says measured (a
# row for a bucket set this run ran holds both, the model's first, to judge it by).
MODEL_ROWS, MODEL_POOL = "Rows/s (model)", "Pool MiB (model)"
MODEL_WASTE, MODEL_FALLBACK = "Padding waste (model)", "Fallback (model)"
RAN_ROWS, RAN_POOL = "Rows/s (measured)", "Pool MiB (measured)"
RAN_HERE = "ran here: "  # a plan row for a bucket set this run measured

# The summary and the advice each shown as two tables, each led by its row's name: side
# by side their 15 and 9 columns ran past the page at 1280 px.
SUMMARY_PARTS = (("Strategy", "Status", "Ran as", "Requests/s", "Rows/s", "p50 ms", "p99 ms",
                  "Padding waste", "Hit", "Fallback"),
                 ("Strategy", "Graphs", "Pool MiB", "Setup s", "mJ/request", "Matches eager",
                  "Note"))
ADVICE_PARTS = (("Plan", "Buckets", "Graphs", MODEL_ROWS, RAN_ROWS),
                ("Plan", MODEL_POOL, RAN_POOL, MODEL_WASTE, MODEL_FALLBACK))


def table_parts(table: pd.DataFrame, parts: tuple[tuple[str, ...], ...]
                ) -> list[list[str]]:
    """`table`'s columns in `parts` (those it has); a column no part names goes to the
    last one, so none is dropped."""
    shown = [[c for c in part if c in table.columns] for part in parts]
    named = {c for part in parts for c in part}
    shown[-1] += [c for c in table.columns if c not in named]
    return shown


def _plan_row(name: str, plan: advisor.Plan | None,
              measured: ServeResult | None = None) -> dict:
    # Each measured figure right of the model's, so the two are read together.
    if plan is None:
        return {"Plan": name, "Buckets": MISSING, "Graphs": MISSING, MODEL_ROWS: MISSING,
                RAN_ROWS: MISSING, MODEL_POOL: MISSING, RAN_POOL: MISSING,
                MODEL_WASTE: MISSING, MODEL_FALLBACK: MISSING}
    pool = None if measured is None else measured.graph_pool_bytes
    return {"Plan": name, "Buckets": "/".join(map(str, plan.buckets)) or "none (all eager)",
            "Graphs": str(len(plan.buckets)), MODEL_ROWS: f"{plan.rows_per_s:,.0f}",
            RAN_ROWS: _fmt(None if measured is None else measured.rows_per_s, "{:,.0f}"),
            MODEL_POOL: _fmt(None if plan.pool_bytes is None
                             else plan.pool_bytes / MIB, "{:,.1f}"),
            RAN_POOL: _fmt(None if pool is None else pool / MIB, "{:,.1f}"),
            MODEL_WASTE: f"{plan.padding_waste:.0%}",
            MODEL_FALLBACK: f"{plan.fallback_rate:.0%}"}


def advice(stream: list[int], profile: pd.DataFrame, results: pd.DataFrame,
           budget_mib: float | None, requests: pd.DataFrame | None = None,
           ) -> tuple[advisor.Advice, pd.DataFrame]:
    """The advisor's proposal within the budget, beside powers of two and the bucket sets
    this run measured (the model's figures next to the measured ones, to judge it by).
    Eager times come from the eager replay when the run has one (see eager_from_replay)."""
    replay = eager_from_replay(requests) if requests is not None and len(requests) else {}
    pts = profile_points(profile, replay)
    pmf = buckets.empirical_pmf(stream)
    budget = None if budget_mib is None else int(budget_mib * MIB)
    adv = advisor.advise(pmf, pts, budget_bytes=budget)
    model = advisor.Model(pmf, pts)
    rows = [_plan_row("advisor: recommended", adv.recommended),
            _plan_row("advisor: highest throughput", adv.best),
            _plan_row("powers of two (best within budget)", adv.pow2)]
    for r in records(results):
        if r.kind == "buckets" and r.status == "ok":
            try:
                plan = model.plan(r.buckets)
            except ValueError:
                plan = None
            rows.append(_plan_row(f"{RAN_HERE}{r.strategy}", plan, r))
    return adv, pd.DataFrame(rows)


def _buckets(plan: advisor.Plan) -> str:
    return "/".join(map(str, plan.buckets)) or "nothing (eager only)"


def advice_lines(adv: advisor.Advice) -> list[str]:
    """The recommendation in words, and why it beat the plans that came as close: the
    tie-break of advisor.TOLERANCE, told with this run's figures."""
    rec, tie = adv.recommended, f"{advisor.TOLERANCE:.0%}"
    pool = "" if rec.pool_bytes is None else f", {rec.pool_bytes / MIB:,.1f} MiB"
    lines = [f"Capture **{_buckets(rec)}**: {rec.rows_per_s:,.0f} rows/s by the model, "
             f"{len(rec.buckets)} graph(s){pool}, {rec.padding_waste:.0%} padding"
             + (f"; powers of two within the budget give {adv.pow2.rows_per_s:,.0f} rows/s "
                f"({_buckets(adv.pow2)})." if adv.pow2 else ".")]
    # memory_flat: memory known, so every plan's pool is (contract/advisor.py Model.pool)
    flat_pool = rec.pool_bytes if adv.memory_flat else None
    if flat_pool is not None:
        few = adv.fewest_graphs
        than = ("" if few == rec else f" against {few.padding_waste:.0%} for "
                f"{_buckets(few)}, the fewest graphs that come as close")
        lines.append(f"Why: every plan within {tie} of the best throughput keeps the same "
                     f"{flat_pool / MIB:,.1f} MiB of graph pool, so memory does not "
                     f"choose between them and the least padding wins ({rec.padding_waste:.0%}"
                     f"{than}). Padding is compute thrown away on every padded request; "
                     "one more graph costs only its capture at start-up.")
    elif adv.memory_known:
        lines.append(f"Why: among the plans within {tie} of the best throughput the "
                     "smallest graph pool wins, then the least padding.")
    else:
        lines.append(f"Why: graph memory is unknown here, so among the plans within {tie} "
                     "of the best throughput the fewest graphs win, then the least padding.")
    return lines


def _median(requests: pd.DataFrame, strategy: str, batch: int) -> float | None:
    sel = requests[(requests["strategy"] == strategy) & (requests["batch_size"] == batch)]
    return None if sel.empty else float(sel["latency_ms"].median())


def example_lines(stream: list[int], results: pd.DataFrame,
                  requests: pd.DataFrame) -> list[str]:
    """The 8/16/32 example of the issue, told with this run's own numbers (or with its
    first bucket strategy when it did not measure 8/16/32)."""
    rs = [r for r in records(results) if r.kind == "buckets"]
    if not rs:
        return []
    r = next((x for x in rs if list(x.buckets) == [8, 16, 32]), rs[0])
    bs, top, name = list(r.buckets), r.buckets[-1], r.strategy
    sizes = sorted(set(stream))
    # Each padded batch size and the bucket it pads to (one above the largest has none).
    padded = {x: to for x in sizes
              if (to := buckets.choose_bucket(x, bs)) is not None and to != x}
    falls = [x for x in sizes if x > top]
    st = buckets.bucket_stats(stream, bs)
    lines = [f"**{name}**: {st.hits} of {st.requests} requests ({st.hit_rate:.0%}) ran in a "
             f"graph, {st.exact} of them with no padding; {st.fallbacks} "
             f"({st.fallback_rate:.0%}) were above {top} and ran eager. Rows computed: "
             f"{st.executed_rows:,} for {st.real_rows:,} asked for, a padding waste of "
             f"{st.padding_waste:.0%} ({st.wasted_fraction:.0%} of the rows computed were "
             "thrown away)."]
    if padded:
        x = 11 if 11 in padded else max(padded, key=lambda y: 1 - y / padded[y])
        b = padded[x]
        line = (f"Batch {x} pads to {b}: {b - x} of its {b} rows ({1 - x / b:.0%}) are "
                f"padding, computed and thrown away ({b / x - 1:.0%} more rows than asked).")
        t, e = _median(requests, name, x), _median(requests, "eager", x)
        if t is not None and e is not None:
            line += f" Measured: {t:.3f} ms in the {b} graph against {e:.3f} ms eager."
        lines.append(line)
    if falls:
        x = 40 if 40 in falls else falls[0]
        line = f"Batch {x} matches no bucket (the largest is {top}): it falls back to eager."
        t, e = _median(requests, name, x), _median(requests, "eager", x)
        if t is not None and e is not None:
            line += f" Measured: {t:.3f} ms, against {e:.3f} ms for plain eager."
        lines.append(line)
    return lines
