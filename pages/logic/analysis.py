"""The dashboard's maths as pure pandas functions: speedups, break-even, payback, busy
fraction, comparability, cross-run ratios, environment diffs, and what the intervals say
(noise badges, ties within noise, host launch cost).

Every function takes the DataFrames db.queries returns (a points frame has one row per
(run_id, mode, batch_size)) and returns a new frame or a small value. Unknown figures stay
NaN / None all the way through, so a missing number is never shown as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pages.logic.names import device_name, known
from runner.format import verdict as vd
from runner.format.bundle import ENVIRONMENT_FIELDS, MODES
from runner.format.measurement import details_of
from runner.format.numbers import flag_or_none as _flag
from runner.format.numbers import is_missing
from runner.format.numbers import number_or_none as _num
from runner.format.verdict import INCONCLUSIVE, RANKABLE, verdict

# The threshold: above this batch size reduce-overhead gains less than 1.1x over
# compile, so the extra constraints of CUDA graphs (static shapes, a private pool) stop
# paying for themselves.
BREAK_EVEN_GAIN = 1.1
MODE_ORDER = {m: i for i, m in enumerate(MODES)}
# What makes two runs' curves comparable: the same model at the same size and precision.
COMPARABLE_FIELDS = ("kind", "workload", "workload_params", "dtype")


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where the frame predates it (points of older bundles)."""
    if name in df:
        return pd.to_numeric(df[name], errors="coerce")
    return pd.Series(float("nan"), index=df.index)


def usable(points: pd.DataFrame) -> pd.DataFrame:
    """Points with a real step time: status ok and step_ms known and positive."""
    if points.empty:
        return points.copy()
    ok = (points["status"] == "ok") & pd.to_numeric(points["step_ms"]).gt(0)
    return points[ok].copy()


def _eager_reference(details: Any) -> float | None:
    """A point may name the eager time of its own experiment (the published manual graph
    figure was measured against its own eager run); that is the fair reference."""
    return _num(details_of(details).source.eager_reference_ms)


SPEEDUP_COLUMNS = ["run_id", "mode", "batch_size", "step_ms", "eager_ms", "speedup",
                   "speedup_ci_low", "speedup_ci_high", "step_ms_ci_low", "step_ms_ci_high",
                   "verdict"]


def verdicts(df: pd.DataFrame) -> pd.Series:
    """runner/format/verdict.py's verdict of each row's speedup and its interval (the one
    rule: faster, slower, within noise, inconclusive, no interval); None for eager, the
    reference itself, and where the speedup is unknown.

    By column: the Runs board judges every point of every listed run, and a call per row
    cost 0.2 s per 32,000 points. verdict() stays the rule's definition; tests/test_verdict
    holds this to it over the rule's edge cases."""
    if df.empty:
        return pd.Series([], index=df.index, dtype=object)
    v, lo, hi = (pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
                 for c in ("speedup", "speedup_ci_low", "speedup_ci_high"))
    with np.errstate(divide="ignore", invalid="ignore"):
        known = np.isfinite(v)
        has_iv = np.isfinite(lo) & np.isfinite(hi) & (lo <= hi)
        faster = has_iv & (lo > 1.0)
        slower = has_iv & ~faster & (hi < 1.0)
        spread = np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.inf)
        wide = has_iv & ~faster & ~slower & (spread > vd.SPREAD_LIMIT)
    out = np.select([~known | df["mode"].eq("eager").to_numpy(), ~has_iv, faster, slower,
                     wide], [None, vd.NO_INTERVAL, vd.FASTER, vd.SLOWER, vd.INCONCLUSIVE],
                    default=vd.SAME)
    return pd.Series(out, index=df.index, dtype=object)


def speedups(points: pd.DataFrame) -> pd.DataFrame:
    """Speedup over eager per (run, mode, batch).

    Where the runner measured it (bundle version 3) this is the stored median of the
    per-round paired ratio eager / mode with its 95% interval; otherwise eager step time /
    mode step time with no interval (NaN bounds), and its `verdict` (verdicts()).
    Columns: SPEEDUP_COLUMNS. Points without
    an ok eager point at the same batch (or without their own reference) are left out;
    eager itself is included at 1.0 so a chart shows the baseline."""
    cols = SPEEDUP_COLUMNS
    ok = usable(points)
    if ok.empty:
        return pd.DataFrame(columns=cols)
    eager = (ok[ok["mode"] == "eager"].set_index(["run_id", "batch_size"])["step_ms"]
             .rename("eager_ms"))
    out = ok.join(eager, on=["run_id", "batch_size"])
    # By column, not row by row: apply(axis=1) built a Series per point and was most of
    # the Run page's render time on a 100-point run.
    own = (out["details"].map(_eager_reference) if "details" in out
           else pd.Series(None, index=out.index)).astype(float)
    out["eager_ms"] = own.where(own.notna(), out["eager_ms"])
    stored = _col(out, "speedup")
    for c in cols[6:]:
        out[c] = _col(out, c)
    out["speedup"] = stored.where(stored.notna(), out["eager_ms"] / out["step_ms"])
    # A paired interval belongs to the stored median only; eager's 1.0 has none.
    out.loc[stored.isna(), ["speedup_ci_low", "speedup_ci_high"]] = float("nan")
    out = out[out["eager_ms"].notna() | stored.notna()].copy()
    out["verdict"] = verdicts(out)
    return _ordered(out[cols])


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    key = df["mode"].map(MODE_ORDER)
    return (df.assign(_k=key).sort_values(["run_id", "_k", "batch_size"])
            .drop(columns="_k").reset_index(drop=True))


def largest_speedups(points: pd.DataFrame) -> pd.DataFrame:
    """Per non-eager mode: the speedup over eager one can be most sure of, and where.

    Points are ranked by their interval's lower bound (what is 95% sure), not by the
    median, so a spike whose lead lies inside noise is not quoted as the maximum. A point
    without an interval ranks by its median. Inconclusive points (runner/format/verdict.py)
    are never ranked: a mode with nothing else gets one row with verdict "inconclusive"
    (its narrowest interval, to quote as such). `ties` holds the batch sizes (the chosen
    one included) whose interval contains the chosen median: within noise of it;
    `inconclusive` the batch sizes left out of the ranking.
    Columns: mode, speedup, speedup_ci_low, speedup_ci_high, batch_size, step_ms, eager_ms,
    ties, verdict, inconclusive."""
    sp = speedups(points)
    sp = sp[sp["mode"] != "eager"]
    cols = ["mode", "speedup", "speedup_ci_low", "speedup_ci_high", "batch_size", "step_ms",
            "eager_ms", "ties", "verdict", "inconclusive"]
    if sp.empty:
        return pd.DataFrame(columns=cols)
    sp = sp.assign(_rank=sp["speedup_ci_low"].where(sp["speedup_ci_low"].notna(),
                                                    sp["speedup"]),
                   _spread=sp["speedup_ci_high"] / sp["speedup_ci_low"].where(
                       sp["speedup_ci_low"] > 0))
    rows = []
    for _, group in sp.groupby("mode"):
        left_out = group["verdict"].eq(INCONCLUSIVE)
        wrong = tuple(sorted(group.loc[left_out, "batch_size"].astype(int)))
        ranked = group[group["verdict"].isin(RANKABLE)]
        if ranked.empty:
            # Nothing to rank: the narrowest interval stands for the mode, as inconclusive.
            best = group.loc[group["_spread"].fillna(float("inf")).idxmin()].copy()
            best["ties"] = ()
            best["inconclusive"] = wrong
            rows.append(best)
            continue
        best = ranked.loc[ranked["_rank"].idxmax()].copy()
        holds = ((ranked["speedup_ci_low"] <= best["speedup"])
                 & (ranked["speedup_ci_high"] >= best["speedup"]))
        ties = set(ranked.loc[holds, "batch_size"].astype(int)) | {int(best["batch_size"])}
        best["ties"] = tuple(sorted(ties))
        best["inconclusive"] = wrong
        rows.append(best)
    return _ordered(pd.DataFrame(rows).assign(run_id=0))[cols]


def batch_span(chosen: tuple[int, ...], measured) -> str:
    """Batch sizes in words: 'batches 4-16' when they are neighbours among the measured
    ones, else 'batches 4, 64'."""
    order = sorted({int(b) for b in measured} | set(chosen))
    idx = [order.index(b) for b in sorted(chosen)]
    if len(chosen) == 1:
        return f"batch {chosen[0]:,}"
    if idx == list(range(idx[0], idx[0] + len(idx))):
        return f"batches {order[idx[0]]:,}-{order[idx[-1]]:,}"
    return "batches " + ", ".join(f"{b:,}" for b in sorted(chosen))


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
    paired = {}
    for _, row in ok[ok["mode"] == "reduce-overhead"].iterrows():
        vs = details_of(row.get("details")).intervals.vs_compile
        if isinstance(vs, dict) and _num(vs.get("median")) is not None:
            paired[row["batch_size"]] = float(vs["median"])
    # The paired per-round ratio where the runner measured it; else ratio of medians.
    ratios = tuple((int(b), paired.get(b, float(c[b] / r[b]))) for b in both)
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
    (launch gaps = step - busy) and the busy fraction; 1.0 means no launch gap is left.
    host_launch_ms = host launches per step x the host's launch cost (launch_us): what the
    CPU spends launching, the part a CUDA graph removes; NaN where either is unknown."""
    cols = ["run_id", "mode", "batch_size", "step_ms", "gpu_busy_ms", "idle_ms",
            "busy_fraction", "host_launches_per_step", "graph_launches_per_step",
            "gpu_kernels_per_step", "launch_us", "host_launch_ms"]
    ok = usable(points)
    if ok.empty:
        return pd.DataFrame(columns=cols)
    ok["gpu_busy_ms"] = pd.to_numeric(ok["gpu_busy_ms"])
    ok["busy_fraction"] = ok["gpu_busy_ms"] / ok["step_ms"]
    # Busy can exceed the step by timing noise; idle time is never negative.
    ok["idle_ms"] = (ok["step_ms"] - ok["gpu_busy_ms"]).clip(lower=0)
    ok["launch_us"] = _col(ok, "launch_us")
    ok["host_launch_ms"] = _col(ok, "host_launches_per_step") * ok["launch_us"] / 1000.0
    return _ordered(ok[cols])


# --- Noise: intervals, badges, host launch cost -------------------------------------------

NOISE_LEVELS = ("ok", "noisy", "host unstable", "no interval")


def _flags(points: pd.DataFrame, name: str) -> pd.Series:
    """A yes/no column as bools (the database may hand back 1.0 / NaN beside nulls)."""
    if name not in points:
        return pd.Series(False, index=points.index)
    return points[name].map(lambda v: bool(_flag(v))).astype(bool)


def point_badges(points: pd.DataFrame) -> pd.Series:
    """One noise badge per point: 'noisy' (ended on budget with an interval wider than
    target), 'host unstable' (launch cost moved during its rounds), both, 'no interval'
    (measured before intervals existed), or 'ok'. Points without a figure get ''.
    Vectorised: the Runs page counts badges over every listed run's points."""
    if points.empty:
        return pd.Series([], dtype=object)
    measured = points["status"].eq("ok") & _col(points, "step_ms").notna()
    noisy, unstable = _flags(points, "noisy"), _flags(points, "host_unstable")
    has_ci = _col(points, "step_ms_ci_low").notna() & _col(points, "step_ms_ci_high").notna()
    out = pd.Series("ok", index=points.index, dtype=object)
    out[~has_ci] = "no interval"
    out[noisy] = "noisy"
    out[unstable] = "host unstable"
    out[noisy & unstable] = "noisy, host unstable"
    out[~measured] = ""
    return out


NOISE_COUNT_COLUMNS = ("ok_points", "interval_points", "noisy_points", "unstable_points")


def noise_counts(points: pd.DataFrame) -> pd.DataFrame:
    """Per run (index run_id): ok points, those with an interval, noisy, host unstable."""
    if points.empty:
        return pd.DataFrame(columns=list(NOISE_COUNT_COLUMNS)).rename_axis("run_id")
    b = point_badges(points)
    ok = b.ne("")
    df = pd.DataFrame({"run_id": points["run_id"].astype(int), "ok_points": ok,
                       "interval_points": ok & _col(points, "step_ms_ci_low").notna()
                       & _col(points, "step_ms_ci_high").notna(),
                       "noisy_points": b.str.contains("noisy"),
                       "unstable_points": b.str.contains("host unstable")})
    return df.groupby("run_id").sum().astype(int)


def noise_summary(counts: dict | pd.Series) -> tuple[str, str]:
    """(level, text) of one run from its noise counts: level is one of NOISE_LEVELS (the
    worst that applies), text e.g. '3 of 40 points noisy, 1 host unstable'."""
    ok = int(counts.get("ok_points") or 0)
    if ok == 0:
        return "no interval", "no measured point"
    with_ci = int(counts.get("interval_points") or 0)
    noisy, unstable = int(counts.get("noisy_points") or 0), int(counts.get("unstable_points")
                                                                or 0)
    if with_ci == 0 and not noisy and not unstable:
        return "no interval", "no interval"
    parts = []
    if noisy:
        parts.append(f"{noisy} of {ok} points noisy")
    if unstable:
        parts.append(f"{unstable} of {ok} points host unstable")
    if with_ci < ok:
        parts.append(f"{ok - with_ci} of {ok} points without interval")
    level = ("noisy" if noisy else "host unstable" if unstable
             else "no interval" if with_ci < ok else "ok")
    return level, (", ".join(parts) if parts else f"ok: all {ok} points within target")


@dataclass(frozen=True)
class LaunchCost:
    """The host's cost of one trivial kernel launch over a run's points (us)."""
    median: float
    low: float
    high: float
    points: int

    def text(self) -> str:
        return f"{self.median:.1f} us ({self.low:.1f}-{self.high:.1f})"


def launch_cost(points: pd.DataFrame) -> LaunchCost | None:
    """Median and range of the points' launch cost; None when no point measured it."""
    us = _col(usable(points), "launch_us").dropna() if not points.empty else pd.Series([])
    if us.empty:
        return None
    return LaunchCost(float(us.median()), float(us.min()), float(us.max()), len(us))


def ratio_interval(num_low: Any, num_high: Any, den_low: Any,
                   den_high: Any) -> tuple[float, float] | None:
    """A conservative interval for num / den from each side's own 95% interval:
    num_low / den_high .. num_high / den_low. None when a bound is unknown."""
    a, b, c, d = (_num(v) for v in (num_low, num_high, den_low, den_high))
    if None in (a, b, c, d) or c <= 0 or d <= 0:
        return None
    return a / d, b / c


def ratio_verdict(interval: tuple[float, float] | None) -> str:
    """The one rule (runner/format/verdict.py) on a ratio interval: 'faster' / 'slower'
    when it lies wholly above / below 1.0; 'within noise' when it includes 1.0 within the
    rule's spread, 'inconclusive' beyond it; 'no interval' if None."""
    if interval is None:
        return "no interval"
    lo, hi = interval
    # The verdict needs a value only to know it is known; any finite one inside will do.
    return verdict(1.0, lo, hi) or "no interval"


# --- Several runs -----------------------------------------------------------------------

def series_name(header: dict | pd.Series) -> str:
    """How a run is named in a comparison: GPU and torch version, marked when published."""
    gpu = device_name(header)
    torch = known(header.get("torch_version"))
    name = f"{gpu} · torch {torch}" if torch else gpu
    if header.get("source") == "published":
        name += " (published)"
    return name


def run_names(headers: pd.DataFrame) -> dict[int, str]:
    """Run id -> '#id GPU · torch', unique even when two runs share an environment."""
    return {int(h["id"]): f"#{int(h['id'])} {series_name(h)}" for _, h in headers.iterrows()}


def _canon(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={v[k]}" for k in sorted(v))
    if is_missing(v):
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
    ok = ok.assign(step_ms_ci_low=_col(ok, "step_ms_ci_low"),
                   step_ms_ci_high=_col(ok, "step_ms_ci_high"))
    every = ok.pivot_table(index=["mode", "batch_size"], columns="run_id",
                           values=["step_ms", "step_ms_ci_low", "step_ms_ci_high"],
                           aggfunc="first", dropna=False)
    wide = every["step_ms"]
    keep = wide.notna().sum(axis=1) >= 2
    wide = wide[keep]
    lows, highs = every["step_ms_ci_low"][keep], every["step_ms_ci_high"][keep]
    out = pd.DataFrame(index=wide.index)
    for rid in ids:
        out[f"{names[rid]} ms"] = wide[rid] if rid in wide else float("nan")
    for rid in ids:
        if rid == base:
            continue
        col = f"{names[rid]} vs #{base}"
        if rid in wide and base in wide:
            out[col] = wide[base] / wide[rid]
            out[f"{col} 95%"] = [
                _verdict_text(ratio_interval(lows.at[k, base], highs.at[k, base],
                                             lows.at[k, rid], highs.at[k, rid]), r)
                for k, r in zip(wide.index, out[col], strict=True)]
        else:
            out[col] = float("nan")
            out[f"{col} 95%"] = "—"
    # The answer first: ratios and their verdicts, then each run's own time, so the ratio
    # is on screen at 1280 px however many runs are compared.
    ms = [c for c in out.columns if c.endswith(" ms")]
    out = out[[c for c in out.columns if c not in ms] + ms].reset_index()
    key = out["mode"].map(MODE_ORDER)
    return (out.assign(_k=key).sort_values(["_k", "batch_size"]).drop(columns="_k")
            .reset_index(drop=True))


def _verdict_text(interval: tuple[float, float] | None, ratio: float) -> str:
    if _num(ratio) is None:
        return "—"
    said = ratio_verdict(interval)
    if interval is None:
        return said
    return f"{said} ({interval[0]:.2f}-{interval[1]:.2f}x)"


LAUNCH_FIELD = "host launch cost (us, median and range)"


def environment_diff(headers: pd.DataFrame, only_differences: bool = True,
                     points: pd.DataFrame | None = None) -> pd.DataFrame:
    """Environment and workload fields side by side, one column per run. With
    `only_differences`, only the fields whose values are not all equal. Given the runs'
    points, a row for the host's launch cost too: it is a property of the host (CPU,
    driver), so two GPUs on different hosts differ in it as much as in the GPU."""
    fields = [*COMPARABLE_FIELDS, "source", *ENVIRONMENT_FIELDS]
    names = run_names(headers)
    launch = {}
    if points is not None:
        fields.append(LAUNCH_FIELD)
        for _, h in headers.iterrows():
            lc = launch_cost(points[points["run_id"] == h["id"]]) if not points.empty \
                else None
            launch[int(h["id"])] = lc.text() if lc else "—"
    rows = []
    for f in fields:
        values = [launch[int(h["id"])] if f == LAUNCH_FIELD else _canon(h.get(f))
                  for _, h in headers.iterrows()]
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


def has_noise_counts(runs: pd.DataFrame) -> bool:
    return all(c in runs for c in NOISE_COUNT_COLUMNS)


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
        "parameters": runs["workload_params"].map(_canon),
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
