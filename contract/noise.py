"""What the intervals say about a run's points, once, over typed records (issue 45): a
noise badge per point and the counts per run, the host's launch cost, the one verdict
rule (verdict.py) on a ratio of two runs' figures, and the spread between processes.
The Run page, the Runs board (its counts are summed in SQL by db/queries.py runs_list,
by the same conditions as point_badge), Compare and the report read them here.
Standard library only.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contract.measurement import Measurement
from contract.numbers import number_or_none
from contract.speedups import usable
from contract.verdict import verdict

NOISE_LEVELS = ("ok", "noisy", "host unstable", "no interval")


def measured(m: Measurement) -> bool:
    """A point with a figure to judge: ok, with a step time."""
    return m.status == "ok" and number_or_none(m.timing.step_ms) is not None


def has_interval(m: Measurement) -> bool:
    return (number_or_none(m.intervals.step_ms_ci_low) is not None
            and number_or_none(m.intervals.step_ms_ci_high) is not None)


def point_badge(m: Measurement) -> str:
    """A point's noise badge: 'noisy' (ended on budget with an interval wider than
    target), 'host unstable' (launch cost moved during its rounds), both, 'no interval'
    (measured before intervals existed), or 'ok'; '' for a point without a figure."""
    if not measured(m):
        return ""
    noisy, unstable = bool(m.timing.noisy), bool(m.intervals.host_unstable)
    if noisy and unstable:
        return "noisy, host unstable"
    if noisy or unstable:
        return "noisy" if noisy else "host unstable"
    return "ok" if has_interval(m) else "no interval"


@dataclass(frozen=True)
class NoiseCounts:
    """One run's noise counts: its ok points, and of those the ones with an interval, the
    noisy ones and the host unstable ones."""
    ok_points: int = 0
    interval_points: int = 0
    noisy_points: int = 0
    unstable_points: int = 0


def counts(points: Iterable[Measurement]) -> NoiseCounts:
    """One run's noise counts from its points (the SQL sum of db/queries.py counts the
    same conditions)."""
    ok = [m for m in points if measured(m)]
    return NoiseCounts(len(ok), sum(has_interval(m) for m in ok),
                       sum(bool(m.timing.noisy) for m in ok),
                       sum(bool(m.intervals.host_unstable) for m in ok))


def noise_summary(c: NoiseCounts) -> tuple[str, str]:
    """(level, text) of one run from its noise counts: level is one of NOISE_LEVELS (the
    worst that applies), text e.g. '3 of 40 points noisy, 1 host unstable'."""
    ok = c.ok_points
    if ok == 0:
        return "no interval", "no measured point"
    with_ci, noisy, unstable = c.interval_points, c.noisy_points, c.unstable_points
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


def run_noise(points: Iterable[Measurement]) -> tuple[str, str]:
    """(level, text) of one run's points, as noise_summary says it."""
    return noise_summary(counts(points))


@dataclass(frozen=True)
class LaunchCost:
    """The host's cost of one trivial kernel launch over a run's points (us)."""
    median: float
    low: float
    high: float
    points: int

    def text(self) -> str:
        return f"{self.median:.1f} us ({self.low:.1f}-{self.high:.1f})"


def launch_cost(points: Iterable[Measurement]) -> LaunchCost | None:
    """Median and range of the points' launch cost; None when no point measured it."""
    us = [v for v in (number_or_none(m.intervals.launch_us) for m in usable(points))
          if v is not None]
    if not us:
        return None
    return LaunchCost(statistics.median(us), min(us), max(us), len(us))


def ratio_interval(num_low: object, num_high: object, den_low: object,
                   den_high: object) -> tuple[float, float] | None:
    """A conservative interval for num / den from each side's own 95% interval:
    num_low / den_high .. num_high / den_low. None when a bound is unknown."""
    a, b, c, d = (number_or_none(v) for v in (num_low, num_high, den_low, den_high))
    if a is None or b is None or c is None or d is None or c <= 0 or d <= 0:
        return None
    return a / d, b / c


def ratio_verdict(interval: tuple[float, float] | None) -> str:
    """The one rule (verdict.py) on a ratio interval: 'faster' / 'slower' when it lies
    wholly above / below 1.0; 'within noise' when it includes 1.0 within the rule's
    spread, 'inconclusive' beyond it; 'no interval' if None."""
    if interval is None:
        return "no interval"
    lo, hi = interval
    # The verdict needs a value only to know it is known; any finite one inside will do.
    return verdict(1.0, lo, hi) or "no interval"


def process_medians(m: Measurement) -> list[float] | None:
    """Each process's median round (ms), in the order the processes ran; None for a point
    timed in one process or without its rounds' processes (details.round_process gives
    each round's process, samples_ms the rounds, in the same order)."""
    samples, procs = m.timing.samples_ms, m.intervals.round_process
    if not isinstance(samples, Sequence) or not isinstance(procs, Sequence) \
            or len(samples) != len(procs) or not samples:
        return None
    by: dict[object, list[float]] = {}
    for ms, proc in zip(samples, procs, strict=True):
        v = number_or_none(ms)
        if v is not None:
            by.setdefault(proc, []).append(v)
    if len(by) < 2:
        return None
    return [float(statistics.median(v)) for v in by.values()]


# How far past its rounds an interval must reach (a share of the median) before the
# processes are named as what made it: a hair past the rounds is the t factor's rounding
# on close medians, not a host state.
PAST_ROUNDS = 0.05


def process_note(m: Measurement) -> str | None:
    """One line for a point whose 95% step interval the spread between processes makes:
    it reaches past every round it summarises, at either end, by more than PAST_ROUNDS of
    the median (the processes' medians widen it, each process one cluster:
    docs/MEASUREMENT.md, Processes), e.g. '3 processes read 1.35, 0.87, 0.86 ms: the
    host's state, which lasts a process, puts the interval's low end (0.10 ms) below every
    round (the lowest 0.11 ms)'. The end (or ends) past the rounds is named: an interval
    narrower than the rounds that reaches below them was said to "reach past the rounds"
    (issue 46). None where the rounds span the interval, or for one process."""
    medians = process_medians(m)
    mid = number_or_none(m.timing.step_ms)
    lo = number_or_none(m.intervals.step_ms_ci_low)
    hi = number_or_none(m.intervals.step_ms_ci_high)
    if medians is None or mid is None or lo is None or hi is None or mid <= 0:
        return None
    rounds = [v for v in (number_or_none(x) for x in m.timing.samples_ms) if v is not None]
    if not rounds:
        return None
    low, high = min(rounds), max(rounds)
    below, above = low - lo > PAST_ROUNDS * mid, hi - high > PAST_ROUNDS * mid
    if below and above:
        said = (f"makes the interval ({lo:.2f}-{hi:.2f} ms) wider than the rounds "
                f"themselves ({low:.2f}-{high:.2f} ms)")
    elif below:
        said = (f"puts the interval's low end ({lo:.2f} ms) below every round (the lowest "
                f"{low:.2f} ms)")
    elif above:
        said = (f"puts the interval's high end ({hi:.2f} ms) above every round (the highest "
                f"{high:.2f} ms)")
    else:
        return None
    read = ", ".join(f"{x:.2f}" for x in medians)
    return (f"{len(medians)} processes read {read} ms: the host's state, which lasts a "
            f"process, {said}")


__all__ = ["NOISE_LEVELS", "PAST_ROUNDS", "LaunchCost", "NoiseCounts", "counts",
           "has_interval", "launch_cost", "measured", "noise_summary", "point_badge",
           "process_medians", "process_note", "ratio_interval", "ratio_verdict",
           "run_noise"]
