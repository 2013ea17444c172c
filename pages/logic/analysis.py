"""One run's maths as pure pandas functions: speedups and their verdicts, the largest
speedup one can be sure of (ties within noise), break-even, payback and where the step
time goes. Noise badges and launch cost are noise.py's, several runs comparing.py's.

Every function takes the DataFrames db.queries returns (a points frame has one row per
(run_id, mode, batch_size)) and returns a new frame or a small value. Unknown figures stay
NaN / None all the way through, so a missing number is never shown as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contract import run_summary
from contract import verdict as vd
from contract.bundle import MODES
from contract.measurement import Measurement, details_of
from contract.numbers import number_or_none
from contract.run_summary import BREAK_EVEN_GAIN
from contract.verdict import INCONCLUSIVE, RANKABLE

MODE_ORDER = {m: i for i, m in enumerate(MODES)}


def numeric_column(df: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where the frame predates it (points of older bundles)."""
    if name in df:
        return pd.to_numeric(df[name], errors="coerce")
    return pd.Series(float("nan"), index=df.index)


def point_record(row: Mapping[str, Any]) -> Measurement:
    """A points-frame row (a Series or a to_dict record) as the typed point record
    (contract/measurement.py); a details cell that is not a mapping, and a frame
    without the column, read as none."""
    doc = dict(row)
    if "details" in doc and not isinstance(doc["details"], Mapping):
        doc["details"] = None  # a frame's NaN is truthy: from_json would take it for details
    return Measurement.from_json(doc)


def usable(points: pd.DataFrame) -> pd.DataFrame:
    """Points with a real step time: status ok and step_ms known and positive."""
    if points.empty:
        return points.copy()
    ok = (points["status"] == "ok") & pd.to_numeric(points["step_ms"]).gt(0)
    return points[ok].copy()


def _eager_reference(details: Any) -> float | None:
    """A point may name the eager time of its own experiment (the published manual graph
    figure was measured against its own eager run); that is the fair reference."""
    return number_or_none(details_of(details).source.eager_reference_ms)


SPEEDUP_COLUMNS = ["run_id", "mode", "batch_size", "step_ms", "eager_ms", "speedup",
                   "speedup_ci_low", "speedup_ci_high", "step_ms_ci_low", "step_ms_ci_high",
                   "verdict"]


def verdicts(df: pd.DataFrame) -> pd.Series:
    """contract/verdict.py's verdict of each row's speedup and its interval (the one
    rule: faster, slower, within noise, inconclusive, no interval); None for eager, the
    reference itself, and where the speedup is unknown.

    By column: the Runs board judges every point of every listed run, and a call per row
    cost 0.2 s per 32,000 points. verdict() stays the rule's definition;
    tests/contract/test_verdict.py holds this to it over the rule's edge cases."""
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
    stored = numeric_column(out, "speedup")
    for c in cols[6:]:
        out[c] = numeric_column(out, c)
    out["speedup"] = stored.where(stored.notna(), out["eager_ms"] / out["step_ms"])
    # A paired interval belongs to the stored median only; eager's 1.0 has none.
    out.loc[stored.isna(), ["speedup_ci_low", "speedup_ci_high"]] = float("nan")
    out = out[out["eager_ms"].notna() | stored.notna()].copy()
    out["verdict"] = verdicts(out)
    return in_mode_order(out[cols])


def in_mode_order(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    key = df["mode"].map(MODE_ORDER)
    return (df.assign(_k=key).sort_values(["run_id", "_k", "batch_size"])
            .drop(columns="_k").reset_index(drop=True))


def largest_speedups(points: pd.DataFrame) -> pd.DataFrame:
    """Per non-eager mode: the speedup over eager one can be most sure of, and where.

    Points are ranked by their interval's lower bound (what is 95% sure), not by the
    median, so a spike whose lead lies inside noise is not quoted as the maximum. A point
    without an interval ranks by its median. Inconclusive points (contract/verdict.py)
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
    return in_mode_order(pd.DataFrame(rows).assign(run_id=0))[cols]


def batch_span(chosen: tuple[int, ...], measured) -> str:
    """Batch sizes in words: 'batches 4-16' when they are neighbours among the measured
    ones, else 'batches 4, 64'. No thousands separators: 'batches 1, 1,024, 4,096' read
    as five numbers."""
    order = sorted({int(b) for b in measured} | set(chosen))
    idx = [order.index(b) for b in sorted(chosen)]
    if len(chosen) == 1:
        return f"batch {chosen[0]}"
    if idx == list(range(idx[0], idx[0] + len(idx))):
        return f"batches {order[idx[0]]}-{order[idx[-1]]}"
    return "batches " + ", ".join(str(b) for b in sorted(chosen))


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
    """The run summary's break-even (contract/run_summary.py: the one scan, on the
    same ratios) with what the headline says around it."""
    ratios = tuple((int(b), float(x)) for b, x in run_summary.break_even_ratios(
        run_summary.records(usable(points).to_dict("records"))))
    if not ratios:
        return BreakEven("unknown", threshold=threshold)
    first_below = run_summary.first_below(ratios, threshold)  # the one scan of the rule
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
        s = number_or_none(row["setup_s"])
        if s is None or row["never"]:
            return None
        return float(math.ceil(s * 1000.0 / row["saving_ms"]))

    out["payback_steps"] = out.apply(steps, axis=1).astype(float) if len(out) else []
    return in_mode_order(out.assign(run_id=0))[cols]


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
    ok["launch_us"] = numeric_column(ok, "launch_us")
    ok["host_launch_ms"] = numeric_column(ok, "host_launches_per_step") * ok["launch_us"] / 1000.0
    return in_mode_order(ok[cols])


