"""The dashboard's maths as pure pandas functions: speedups, break-even, payback, busy
fraction, comparability, cross-run ratios, environment diffs.

Every function takes the DataFrames db.queries returns (a points frame has one row per
(run_id, mode, batch_size)) and returns a new frame or a small value. Unknown figures stay
NaN / None all the way through, so a missing number is never shown as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from runner.bundle import ENVIRONMENT_FIELDS, MODES

# The threshold: above this batch size reduce-overhead gains less than 1.1x over
# compile, so the extra constraints of CUDA graphs (static shapes, a private pool) stop
# paying for themselves.
BREAK_EVEN_GAIN = 1.1
GRAPH_MODES = tuple(m for m in MODES if m != "eager")
MODE_ORDER = {m: i for i, m in enumerate(MODES)}
# What makes two runs' curves comparable: the same model at the same size and precision.
COMPARABLE_FIELDS = ("kind", "workload", "workload_params", "dtype")


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def usable(points: pd.DataFrame) -> pd.DataFrame:
    """Points with a real step time: status ok and step_ms known and positive."""
    if points.empty:
        return points.copy()
    ok = (points["status"] == "ok") & pd.to_numeric(points["step_ms"]).gt(0)
    return points[ok].copy()


def _eager_reference(row: pd.Series) -> float | None:
    """A point may name the eager time of its own experiment (the published manual graph
    figure was measured against its own eager run); that is the fair reference."""
    details = row.get("details")
    if isinstance(details, dict):
        return _num(details.get("eager_reference_ms"))
    return None


def speedups(points: pd.DataFrame) -> pd.DataFrame:
    """Speedup over eager per (run, mode, batch): eager step time / mode step time.

    Columns: run_id, mode, batch_size, step_ms, eager_ms, speedup. Points without an ok
    eager point at the same batch (or without their own reference) are left out; eager
    itself is included at 1.0 so a chart shows the baseline."""
    cols = ["run_id", "mode", "batch_size", "step_ms", "eager_ms", "speedup"]
    ok = usable(points)
    if ok.empty:
        return pd.DataFrame(columns=cols)
    eager = (ok[ok["mode"] == "eager"].set_index(["run_id", "batch_size"])["step_ms"]
             .rename("eager_ms"))
    out = ok.join(eager, on=["run_id", "batch_size"])
    own = out.apply(_eager_reference, axis=1).astype(float)
    out["eager_ms"] = own.where(own.notna(), out["eager_ms"])
    out = out[out["eager_ms"].notna()].copy()
    out["speedup"] = out["eager_ms"] / out["step_ms"]
    return _ordered(out[cols])


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    key = df["mode"].map(MODE_ORDER)
    return (df.assign(_k=key).sort_values(["run_id", "_k", "batch_size"])
            .drop(columns="_k").reset_index(drop=True))


def largest_speedups(points: pd.DataFrame) -> pd.DataFrame:
    """Per non-eager mode: its largest speedup over eager and the batch size where.
    Columns: mode, speedup, batch_size, step_ms, eager_ms."""
    sp = speedups(points)
    sp = sp[sp["mode"] != "eager"]
    cols = ["mode", "speedup", "batch_size", "step_ms", "eager_ms"]
    if sp.empty:
        return pd.DataFrame(columns=cols)
    best = sp.loc[sp.groupby("mode")["speedup"].idxmax()]
    return _ordered(best.assign(run_id=0))[cols]


@dataclass(frozen=True)
class BreakEven:
    """Where reduce-overhead stops gaining `threshold`x over compile.

    status: "crosses" (gains at `last_gaining`, below threshold from `batch_size` on),
    "never-below" (gains at every measured batch), "always-below" (at none), or
    "unknown" (no batch size with both modes measured)."""
    status: str
    batch_size: int | None = None      # first batch from which every larger one is below
    last_gaining: int | None = None    # largest batch that still gains >= threshold
    threshold: float = BREAK_EVEN_GAIN
    ratios: tuple[tuple[int, float], ...] = ()  # (batch, compile_ms / reduce_overhead_ms)


def break_even(points: pd.DataFrame, threshold: float = BREAK_EVEN_GAIN) -> BreakEven:
    ok = usable(points)
    c = ok[ok["mode"] == "compile"].set_index("batch_size")["step_ms"]
    r = ok[ok["mode"] == "reduce-overhead"].set_index("batch_size")["step_ms"]
    both = sorted(set(c.index) & set(r.index))
    if not both:
        return BreakEven("unknown", threshold=threshold)
    ratios = tuple((int(b), float(c[b] / r[b])) for b in both)
    # Scan from the largest batch down: the break-even is where the tail of "below
    # threshold" batches starts. One noisy batch in the middle does not move it.
    first_below = None
    for b, ratio in reversed(ratios):
        if ratio >= threshold:
            break
        first_below = b
    if first_below is None:
        return BreakEven("never-below", last_gaining=ratios[-1][0], threshold=threshold,
                         ratios=ratios)
    if first_below == ratios[0][0]:
        return BreakEven("always-below", batch_size=first_below, threshold=threshold,
                         ratios=ratios)
    last = max(b for b, _ in ratios if b < first_below)
    return BreakEven("crosses", batch_size=first_below, last_gaining=last,
                     threshold=threshold, ratios=ratios)


def payback(points: pd.DataFrame) -> pd.DataFrame:
    """Steps a mode must run to repay its setup (compile, warm-up, capture) with its
    per-step saving over eager: ceil(setup_s * 1000 / (eager_ms - mode_ms)).

    Columns: mode, batch_size, setup_s, saving_ms, payback_steps. payback_steps is None
    when setup is unknown, and also when the mode saves nothing (it never pays back; then
    `never` is True)."""
    sp = speedups(points)
    sp = sp[sp["mode"] != "eager"]
    cols = ["mode", "batch_size", "setup_s", "saving_ms", "payback_steps", "never"]
    if sp.empty:
        return pd.DataFrame(columns=cols)
    setup = usable(points).set_index(["run_id", "mode", "batch_size"])["setup_s"]
    out = sp.join(setup, on=["run_id", "mode", "batch_size"])
    out["saving_ms"] = out["eager_ms"] - out["step_ms"]
    out["never"] = out["saving_ms"] <= 0

    def steps(row) -> float | None:
        s = _num(row["setup_s"])
        if s is None or row["never"]:
            return None
        return float(math.ceil(s * 1000.0 / row["saving_ms"]))

    out["payback_steps"] = out.apply(steps, axis=1).astype(float) if len(out) else []
    return _ordered(out.assign(run_id=0))[cols]


def time_split(points: pd.DataFrame) -> pd.DataFrame:
    """Where the step time goes, per (mode, batch): GPU busy (sum of kernel time), idle
    (launch gaps = step - busy) and the busy fraction; 1.0 means no launch gap is left."""
    cols = ["run_id", "mode", "batch_size", "step_ms", "gpu_busy_ms", "idle_ms",
            "busy_fraction", "host_launches_per_step", "graph_launches_per_step",
            "gpu_kernels_per_step"]
    ok = usable(points)
    if ok.empty:
        return pd.DataFrame(columns=cols)
    ok["gpu_busy_ms"] = pd.to_numeric(ok["gpu_busy_ms"])
    ok["busy_fraction"] = ok["gpu_busy_ms"] / ok["step_ms"]
    # Busy can exceed the step by timing noise; idle time is never negative.
    ok["idle_ms"] = (ok["step_ms"] - ok["gpu_busy_ms"]).clip(lower=0)
    return _ordered(ok[cols])


# --- Several runs -----------------------------------------------------------------------

def series_name(header: dict | pd.Series) -> str:
    """How a run is named in a comparison: GPU and torch version, marked when published."""
    gpu = header.get("gpu_name") or "cpu"
    torch = header.get("torch_version")
    name = f"{gpu} · torch {torch}" if torch else str(gpu)
    if header.get("source") == "published":
        name += " (published)"
    return name


def run_names(headers: pd.DataFrame) -> dict[int, str]:
    """Run id -> '#id GPU · torch', unique even when two runs share an environment."""
    return {int(h["id"]): f"#{int(h['id'])} {series_name(h)}" for _, h in headers.iterrows()}


def _canon(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={v[k]}" for k in sorted(v))
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # a count that pandas widened to float beside a missing value
    return str(v)


def _comparable_value(header, field: str) -> Any:
    """The runner records the dtype among the workload parameters too; it is compared
    once, as dtype, so a bundle that leaves it out of its parameters still compares."""
    value = header[field]
    if field == "workload_params" and isinstance(value, dict) and \
            value.get("dtype") in (None, header.get("dtype")):
        value = {k: v for k, v in value.items() if k != "dtype"}
    return value


def comparability(headers: pd.DataFrame) -> list[str]:
    """One warning line per field that differs between the runs (workload, parameters,
    dtype): their curves then measure different things."""
    warnings = []
    if len(headers) < 2:
        return warnings
    for field in COMPARABLE_FIELDS:
        values = {int(h["id"]): _canon(_comparable_value(h, field))
                  for _, h in headers.iterrows()}
        if len(set(values.values())) > 1:
            listed = "; ".join(f"run {rid}: {v}" for rid, v in values.items())
            what = field.replace("workload_params", "workload parameters")
            warnings.append(f"Not comparable: {what} differ ({listed}).")
    return warnings


def compare_speedups(points: pd.DataFrame, headers: pd.DataFrame) -> pd.DataFrame:
    """Speedups of several runs with each run's series name, for the overlay chart."""
    sp = speedups(points)
    names = run_names(headers)
    series = {int(h["id"]): series_name(h) for _, h in headers.iterrows()}
    sp["run"] = sp["run_id"].map(names)
    sp["series"] = sp["run_id"].map(series)
    return sp


def ratio_table(points: pd.DataFrame, headers: pd.DataFrame,
                baseline: int | None = None) -> pd.DataFrame:
    """Per (mode, batch): each run's step time, and how many times faster each run is than
    the baseline run (baseline ms / run ms; > 1 means faster). Only (mode, batch) pairs
    that at least two runs measured are kept (a ratio needs two); a run without an ok
    point there keeps NaN."""
    ok = usable(points)
    if ok.empty or headers.empty:
        return pd.DataFrame(columns=["mode", "batch_size"])
    names = run_names(headers)
    ids = [int(i) for i in headers["id"]]
    base = ids[0] if baseline is None else int(baseline)
    wide = ok.pivot_table(index=["mode", "batch_size"], columns="run_id", values="step_ms",
                          aggfunc="first")
    wide = wide[wide.notna().sum(axis=1) >= 2]
    out = pd.DataFrame(index=wide.index)
    for rid in ids:
        out[f"{names[rid]} ms"] = wide[rid] if rid in wide else float("nan")
    for rid in ids:
        if rid == base:
            continue
        if rid in wide and base in wide:
            out[f"{names[rid]} vs #{base}"] = wide[base] / wide[rid]
        else:
            out[f"{names[rid]} vs #{base}"] = float("nan")
    out = out.reset_index()
    key = out["mode"].map(MODE_ORDER)
    return (out.assign(_k=key).sort_values(["_k", "batch_size"]).drop(columns="_k")
            .reset_index(drop=True))


def environment_diff(headers: pd.DataFrame, only_differences: bool = True) -> pd.DataFrame:
    """Environment and workload fields side by side, one column per run. With
    `only_differences`, only the fields whose values are not all equal."""
    fields = [*COMPARABLE_FIELDS, "source", *ENVIRONMENT_FIELDS]
    names = run_names(headers)
    rows = []
    for f in fields:
        values = [_canon(h.get(f)) for _, h in headers.iterrows()]
        differs = len(set(values)) > 1
        if differs or not only_differences:
            cells = dict(zip(names.values(), values, strict=True))
            rows.append({"field": f, **cells, "differs": differs})
    return pd.DataFrame(rows, columns=["field", *names.values(), "differs"])


def status_marks(points: pd.DataFrame) -> pd.Series:
    """A visible mark per point for tables: ok points are blank, others say what and why."""
    icons = {"ok": "", "error": "✖ error", "unsupported": "⊘ unsupported",
             "skipped": "⤼ skipped"}

    def mark(row) -> str:
        icon = icons.get(row["status"], row["status"])
        if not icon:
            return "ok"
        msg = str(row.get("message") or "").strip().splitlines()
        return f"{icon}: {msg[0]}" if msg else icon

    if points.empty:
        return pd.Series([], dtype=object)
    return points.apply(mark, axis=1)


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The Runs page's table: one row per run, published runs marked, a relative link to
    each run page (relative, so it works under any base URL)."""
    cols = ["id", "created", "source", "kind", "GPU", "torch", "workload", "parameters",
            "dtype", "status", "points", "label", "link"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame({
        "id": runs["id"].astype(int),
        "created": runs["created_at"].dt.strftime("%Y-%m-%d %H:%M"),
        "source": runs["source"],
        "kind": runs["kind"],
        "GPU": runs["gpu_name"].fillna("cpu"),
        "torch": runs["torch_version"].fillna("—"),
        "workload": runs["workload"],
        "parameters": runs["workload_params"].map(_canon),
        "dtype": runs["dtype"].fillna("—"),
        "status": runs["status"],
        "points": [f"{int(o)}/{int(p)} ok"
                   for o, p in zip(runs["ok_points"], runs["points"], strict=True)],
        "label": runs["label"].fillna(""),
        # Serve runs (dynamic batch sizes) have their own page.
        "link": [f"{'serve' if k == 'serve' else 'run'}?run={int(i)}"
                 for i, k in zip(runs["id"], runs["kind"], strict=True)],
    })
    return out[cols].reset_index(drop=True)
