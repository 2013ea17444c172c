"""Intervals over rounds: the median and a distribution-free 95% interval around it.

Torch-free and standard library only: the runner computes these as it stops, and the
database layer, the dashboard and the tests recompute them from the raw rounds.

Why an order-statistic interval for the median (not a bootstrap, not mean +- t*sd): a
round's figure is not normal (the host flips between states, so samples come in two
levels), and the median of n independent rounds lies between the k-th smallest and the
k-th largest with a probability given exactly by the binomial distribution, whatever the
distribution of a round. No randomness, so the same rounds give the same interval;
tests/runner/core/test_stats.py shows its coverage on synthetic two-level noise with drift.

Why paired ratios: each round times every mode back to back, so a host state that
slows one round slows all modes of that round alike. The per-round ratio eager / mode
cancels what the modes share, and its median is the speedup the tool reports.

What no interval over one process's rounds can see is a host state that lasts the whole
process. Measured on the lent H200 (bench/repeatability.py, three one-process `mlp`
sweeps): another run's median fell inside a run's interval in 24% of checks, because the
host's launch cost sat at ~11 us in one process and ~8 us in the next for tens of
seconds, and even at the same launch cost two processes differed by ~3%. So rounds from
`--processes K` fresh processes are clusters, not independent samples: `clustered_interval`
widens the interval by the spread between the processes' own medians (a t interval over
K cluster medians, the textbook treatment of a few clusters), never narrowing the
within-process one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from contract.numbers import percentile

LEVEL = 0.95
# A point's launch cost moving more than this ((p90 - p10) / median over its rounds)
# means the host changed state while it was timed: flagged "host unstable".
HOST_UNSTABLE_SPREAD = 0.25


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n


def median_rank(n: int, level: float = LEVEL) -> int | None:
    """The 1-based rank k such that [x_(k), x_(n+1-k)] holds the median with probability
    at least `level`; None when n is too small for any such interval (n < 6 at 95%)."""
    alpha = (1.0 - level) / 2.0
    k = None
    # P(median < x_(k)) = P(fewer than k samples fall below the median) = cdf(k - 1).
    for cand in range(1, n // 2 + 1):
        if _binom_cdf(cand - 1, n) <= alpha:
            k = cand
        else:
            break
    return k


@dataclass(frozen=True)
class Interval:
    """A median with its 95% interval; low/high are None when n is too small."""

    median: float
    low: float | None
    high: float | None
    n: int

    @property
    def half_width(self) -> float:
        """Relative half-width: the larger side over the median (inf when unknown)."""
        if self.low is None or self.high is None or self.median <= 0:
            return math.inf
        return max(self.median - self.low, self.high - self.median) / self.median

    def contains(self, value: float) -> bool:
        return self.low is not None and self.high is not None and self.low <= value <= self.high

    def __str__(self) -> str:
        if self.low is None:
            return f"{self.median:.4g} (no interval, {self.n} rounds)"
        return f"{self.median:.4g} ({self.low:.4g}-{self.high:.4g})"


def median_interval(samples: Sequence[float], level: float = LEVEL) -> Interval | None:
    if not samples:
        return None
    xs = sorted(samples)
    n = len(xs)
    k = median_rank(n, level)
    med = percentile(xs, 50)
    if k is None:
        return Interval(med, None, None, n)
    return Interval(med, xs[k - 1], xs[n - k], n)


# Student's t, two-sided 95% (0.975 quantile), by degrees of freedom: standard tables.
# Past 30 the normal's 1.96 is within 2%.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
         2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
         2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    return _T975[df - 1] if 1 <= df <= len(_T975) else 1.96


def clustered_interval(samples: Sequence[float], clusters: Sequence[int] | None = None,
                       level: float = LEVEL) -> Interval | None:
    """The median of all samples, with an interval that also covers the spread between
    clusters (one cluster = the rounds of one process).

    One cluster: the order-statistic interval. K >= 2 clusters: the union of that
    interval and mean +- t(K-1) * sd / sqrt(K) of the K cluster medians. The t term is
    what says how far another process's figure may land; with K = 2 it is wide (t = 12.7),
    which is the honest price of two processes."""
    if level != LEVEL:
        raise ValueError("only 95% intervals are tabulated")
    within = median_interval(samples, level)
    if within is None or not clusters or len(set(clusters)) < 2:
        return within
    if len(clusters) != len(samples):
        raise ValueError(f"{len(clusters)} cluster ids for {len(samples)} samples")
    groups: dict[int, list[float]] = {}
    for x, c in zip(samples, clusters, strict=True):
        groups.setdefault(c, []).append(x)
    meds = [percentile(g, 50) for g in groups.values()]
    k = len(meds)
    mean = sum(meds) / k
    sd = math.sqrt(sum((m - mean) ** 2 for m in meds) / (k - 1))
    half = t975(k - 1) * sd / math.sqrt(k)
    lows = [mean - half] + ([within.low] if within.low is not None else [])
    highs = [mean + half] + ([within.high] if within.high is not None else [])
    return Interval(within.median, max(0.0, min(lows)), max(highs), within.n)


def paired_ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Per-round ratios numerator[i] / denominator[i] (rounds are aligned by index)."""
    if len(numerator) != len(denominator):
        raise ValueError(f"paired rounds differ in length: {len(numerator)} against "
                         f"{len(denominator)}")
    return [a / b for a, b in zip(numerator, denominator, strict=True) if b > 0 and a > 0]


def ratio_interval(numerator: Sequence[float], denominator: Sequence[float],
                   clusters: Sequence[int] | None = None,
                   level: float = LEVEL) -> Interval | None:
    """The median paired ratio and its interval: the speedup of `denominator`'s mode
    over `numerator`'s when both are step times. `clusters` gives each round's process."""
    if clusters is not None:
        kept = [(a / b, c) for a, b, c in zip(numerator, denominator, clusters, strict=True)
                if a > 0 and b > 0]
        return clustered_interval([r for r, _ in kept], [c for _, c in kept], level)
    return median_interval(paired_ratios(numerator, denominator), level)


def host_unstable(launch_us: Sequence[float], threshold: float = HOST_UNSTABLE_SPREAD,
                  clusters: Sequence[int] | None = None) -> bool | None:
    """Did the host's launch cost move more than `threshold` over these rounds?

    With `clusters` (each round's process), each process is judged on its own rounds:
    processes settling at different launch costs is the between-process spread that the
    clustered intervals already widen for, not a host changing state under one timing."""
    if clusters is not None and len(clusters) == len(launch_us):  # else: no probe ran
        verdicts = [host_unstable([x for x, c in zip(launch_us, clusters, strict=True)
                                   if c == k], threshold)
                    for k in sorted(set(clusters))]
        known = [v for v in verdicts if v is not None]
        return any(known) if known else None
    if len(launch_us) < 5:
        return None
    med = percentile(launch_us, 50)
    if med <= 0:
        return None
    return (percentile(launch_us, 90) - percentile(launch_us, 10)) / med > threshold
