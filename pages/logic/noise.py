"""What the intervals say about a run's points: a noise badge per point and a count per
run, the host's launch cost, and the one verdict rule (contract/verdict.py) on a
ratio of two runs' figures. Pure pandas over the points frames db.queries returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from contract.numbers import flag_or_none as _flag
from contract.numbers import is_missing, number_or_none
from contract.verdict import verdict
from pages.logic.analysis import numeric_column, usable

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
    measured = points["status"].eq("ok") & numeric_column(points, "step_ms").notna()
    noisy, unstable = _flags(points, "noisy"), _flags(points, "host_unstable")
    has_ci = (numeric_column(points, "step_ms_ci_low").notna()
              & numeric_column(points, "step_ms_ci_high").notna())
    out = pd.Series("ok", index=points.index, dtype=object)
    out[~has_ci] = "no interval"
    out[noisy] = "noisy"
    out[unstable] = "host unstable"
    out[noisy & unstable] = "noisy, host unstable"
    out[~measured] = ""
    return out


@dataclass(frozen=True)
class NoiseCounts:
    """One run's noise counts: its ok points, and of those the ones with an interval, the
    noisy ones and the host unstable ones."""
    ok_points: int = 0
    interval_points: int = 0
    noisy_points: int = 0
    unstable_points: int = 0


# The columns holding them in noise_counts' frame and in the runs frame (db/queries.py).
NOISE_COUNT_COLUMNS = tuple(f.name for f in fields(NoiseCounts))


def counts_of(row: Mapping | pd.Series | None) -> NoiseCounts:
    """A row of noise_counts' frame or of the runs frame as NoiseCounts; None (a run
    without a row) and a count the row lacks or leaves unknown read as 0."""
    if row is None:
        return NoiseCounts()
    return NoiseCounts(*(0 if c not in row or is_missing(row[c]) else int(row[c])
                         for c in NOISE_COUNT_COLUMNS))


def noise_counts(points: pd.DataFrame) -> pd.DataFrame:
    """Per run (index run_id): ok points, those with an interval, noisy, host unstable."""
    if points.empty:
        return pd.DataFrame(columns=list(NOISE_COUNT_COLUMNS)).rename_axis("run_id")
    b = point_badges(points)
    ok = b.ne("")
    df = pd.DataFrame({"run_id": points["run_id"].astype(int), "ok_points": ok,
                       "interval_points": ok & numeric_column(points, "step_ms_ci_low").notna()
                       & numeric_column(points, "step_ms_ci_high").notna(),
                       "noisy_points": b.str.contains("noisy"),
                       "unstable_points": b.str.contains("host unstable")})
    return df.groupby("run_id").sum().astype(int)


def run_noise(points: pd.DataFrame) -> tuple[str, str]:
    """(level, text) of one run's points, as noise_summary says it."""
    counts = noise_counts(points)
    return noise_summary(counts_of(counts.iloc[0] if len(counts) else None))


def noise_summary(counts: NoiseCounts) -> tuple[str, str]:
    """(level, text) of one run from its noise counts: level is one of NOISE_LEVELS (the
    worst that applies), text e.g. '3 of 40 points noisy, 1 host unstable'."""
    ok = counts.ok_points
    if ok == 0:
        return "no interval", "no measured point"
    with_ci = counts.interval_points
    noisy, unstable = counts.noisy_points, counts.unstable_points
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
    if points.empty:
        return None
    us = numeric_column(usable(points), "launch_us").dropna()
    if us.empty:
        return None
    return LaunchCost(float(us.median()), float(us.min()), float(us.max()), len(us))


def ratio_interval(num_low: Any, num_high: Any, den_low: Any,
                   den_high: Any) -> tuple[float, float] | None:
    """A conservative interval for num / den from each side's own 95% interval:
    num_low / den_high .. num_high / den_low. None when a bound is unknown."""
    a, b, c, d = (number_or_none(v) for v in (num_low, num_high, den_low, den_high))
    if None in (a, b, c, d) or c <= 0 or d <= 0:
        return None
    return a / d, b / c


def ratio_verdict(interval: tuple[float, float] | None) -> str:
    """The one rule (contract/verdict.py) on a ratio interval: 'faster' / 'slower'
    when it lies wholly above / below 1.0; 'within noise' when it includes 1.0 within the
    rule's spread, 'inconclusive' beyond it; 'no interval' if None."""
    if interval is None:
        return "no interval"
    lo, hi = interval
    # The verdict needs a value only to know it is known; any finite one inside will do.
    return verdict(1.0, lo, hi) or "no interval"


def has_noise_counts(runs: pd.DataFrame) -> bool:
    return all(c in runs for c in NOISE_COUNT_COLUMNS)


def process_medians(samples_ms: Any, round_process: Any) -> list[float] | None:
    """Each process's median round (ms), in the order the processes ran; None for a point
    timed in one process or without its rounds' processes (details.round_process gives
    each round's process, samples_ms the rounds, in the same order)."""
    if not isinstance(samples_ms, (list, tuple)) or not isinstance(round_process, (list, tuple)) \
            or len(samples_ms) != len(round_process) or not samples_ms:
        return None
    by: dict[Any, list[float]] = {}
    for ms, proc in zip(samples_ms, round_process, strict=True):
        v = number_or_none(ms)
        if v is not None:
            by.setdefault(proc, []).append(v)
    if len(by) < 2:
        return None
    return [float(pd.Series(v).median()) for v in by.values()]


# How far past its rounds an interval must reach (a share of the median) before the
# processes are named as what made it: a hair past the rounds is the t factor's rounding
# on close medians, not a host state.
PAST_ROUNDS = 0.05


def process_note(samples_ms: Any, round_process: Any, median: Any, low: Any,
                 high: Any) -> str | None:
    """One line for a point whose 95% step interval the spread between processes makes:
    it reaches past every round it summarises by more than PAST_ROUNDS of the median (the
    processes' medians widen it, each process one cluster: docs/MEASUREMENT.md,
    Processes), e.g. '3 processes read 1.35, 0.87, 0.86 ms: the host's state...'. None
    where the rounds span the interval, or for one process."""
    medians = process_medians(samples_ms, round_process)
    mid, lo, hi = number_or_none(median), number_or_none(low), number_or_none(high)
    if medians is None or None in (mid, lo, hi) or mid <= 0:
        return None
    rounds = [v for v in (number_or_none(x) for x in samples_ms) if v is not None]
    if max(min(rounds) - lo, hi - max(rounds)) <= PAST_ROUNDS * mid:
        return None
    read = ", ".join(f"{m:.2f}" for m in medians)
    return (f"{len(medians)} processes read {read} ms: the host's state, which lasts a "
            f"process, makes the interval ({lo:.2f}-{hi:.2f} ms) reach past the "
            f"rounds themselves ({min(rounds):.2f}-{max(rounds):.2f} ms)")
