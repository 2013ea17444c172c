"""Intervals over rounds: the median and a distribution-free 95% interval around it.

Torch-free and standard library only: the runner computes these as it stops, and the
database layer, the dashboard and the tests recompute them from the raw rounds.

Why an order-statistic interval for the median (not a bootstrap, not mean +- t*sd): a
round's figure is not normal (the host flips between states, so samples come in two
levels), and the median of n independent rounds lies between the k-th smallest and the
k-th largest with a probability given exactly by the binomial distribution, whatever the
distribution of a round. No randomness, so the same rounds give the same interval;
tests/test_stats.py shows its coverage on synthetic two-level noise with drift.

Why paired ratios: each round times every mode back to back, so a host state that
slows one round slows all modes of that round alike. The per-round ratio eager / mode
cancels what the modes share, and its median is the speedup the tool reports.

What no interval over one process's rounds can see is a host state that lasts the whole
process: that is what `--processes` (fresh processes, rounds pooled) is for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

LEVEL = 0.95
# A point's launch cost moving more than this ((p90 - p10) / median over its rounds)
# means the host changed state while it was timed: flagged "host unstable".
HOST_UNSTABLE_SPREAD = 0.25


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in 0..100."""
    if not samples:
        raise ValueError("percentile of no samples")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


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


def paired_ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Per-round ratios numerator[i] / denominator[i] (rounds are aligned by index)."""
    if len(numerator) != len(denominator):
        raise ValueError(f"paired rounds differ in length: {len(numerator)} against "
                         f"{len(denominator)}")
    return [a / b for a, b in zip(numerator, denominator, strict=True) if b > 0 and a > 0]


def ratio_interval(numerator: Sequence[float], denominator: Sequence[float],
                   level: float = LEVEL) -> Interval | None:
    """The median paired ratio and its interval: the speedup of `denominator`'s mode
    over `numerator`'s when both are step times."""
    return median_interval(paired_ratios(numerator, denominator), level)


def host_unstable(launch_us: Sequence[float],
                  threshold: float = HOST_UNSTABLE_SPREAD) -> bool | None:
    """Did the host's launch cost move more than `threshold` over these rounds?"""
    if len(launch_us) < 5:
        return None
    med = percentile(launch_us, 50)
    if med <= 0:
        return None
    return (percentile(launch_us, 90) - percentile(launch_us, 10)) / med > threshold
