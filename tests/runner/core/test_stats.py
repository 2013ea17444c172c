"""runner/core/stats.py: the order-statistic interval for a median, paired ratios, host flag."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest

from runner.core import stats


@pytest.mark.parametrize("n, k", [(5, None), (6, 1), (10, 2), (20, 6), (50, 18), (100, 40)])
def test_median_rank_matches_the_binomial_table(n, k):
    # Standard tables of distribution-free 95% intervals for the median.
    assert stats.median_rank(n) == k


def test_interval_of_few_samples_has_a_median_and_no_bounds():
    iv = stats.median_interval([3.0, 1.0, 2.0])
    assert iv.median == 2.0 and iv.low is None and iv.high is None and iv.n == 3
    assert iv.half_width == math.inf and not iv.contains(2.0)
    assert "no interval" in str(iv)
    assert stats.median_interval([]) is None


def test_interval_bounds_are_order_statistics():
    xs = [float(x) for x in range(1, 21)]  # 1..20, k = 6
    iv = stats.median_interval(list(reversed(xs)))
    assert (iv.low, iv.median, iv.high) == (6.0, 10.5, 15.0)
    assert iv.half_width == pytest.approx(4.5 / 10.5)
    assert iv.contains(6.0) and iv.contains(15.0) and not iv.contains(15.5)


def test_coverage_of_the_median_on_two_level_samples():
    """Samples from two levels (the host's states) are far from normal; the binomial
    interval still holds the true median in at least 95% of trials."""
    rng = random.Random(1)
    # 70% at level 1.0, 30% at level 1.5, 2% jitter: the true median lies in the lower
    # level, at its (0.5 / 0.7) quantile.
    true_median = math.exp(0.02 * NormalDist().inv_cdf(0.5 / 0.7))
    hits, trials = 0, 400
    for _ in range(trials):
        xs = [(1.5 if rng.random() < 0.3 else 1.0) * math.exp(rng.gauss(0, 0.02))
              for _ in range(25)]
        hits += stats.median_interval(xs).contains(true_median)
    assert hits / trials >= 0.93  # nominal 95%; 400 trials put 3 points of slack around it


def test_paired_ratios_and_ratio_interval():
    eager, graph = [2.0, 4.0, 2.2, 4.4, 2.0, 4.0], [1.0, 2.0, 1.1, 2.2, 1.0, 2.0]
    assert stats.paired_ratios(eager, graph) == [2.0] * 6
    iv = stats.ratio_interval(eager, graph)
    assert iv.median == iv.low == iv.high == 2.0  # the shared level cancels in each pair
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_ratios([1.0], [1.0, 2.0])
    assert stats.paired_ratios([1.0, 0.0], [0.0, 1.0]) == []  # no division by zero


def test_host_unstable_flags_a_launch_cost_that_moved():
    assert stats.host_unstable([8.0] * 4) is None  # too few rounds to say
    assert stats.host_unstable([8.0, 8.1, 7.9, 8.0, 8.2, 8.0]) is False
    assert stats.host_unstable([8.0, 8.1, 12.0, 12.2, 8.0, 12.1]) is True


def test_host_unstable_judges_each_process_on_its_own_rounds():
    steady_apart = [8.0, 8.1, 7.9, 8.0, 8.1, 11.0, 11.1, 10.9, 11.0, 11.1]
    procs = [0] * 5 + [1] * 5
    assert stats.host_unstable(steady_apart) is True  # pooled, the two levels look unstable
    assert stats.host_unstable(steady_apart, clusters=procs) is False
    moved_within = [8.0, 8.1, 12.0, 12.2, 8.0, 8.0, 8.1, 7.9, 8.0, 8.1]
    assert stats.host_unstable(moved_within, clusters=procs) is True
    assert stats.host_unstable([8.0] * 6, clusters=[0, 0, 0, 1, 1, 1]) is None


def test_one_cluster_is_the_order_statistic_interval():
    xs = [float(x) for x in range(1, 21)]
    assert stats.clustered_interval(xs, [0] * 20) == stats.median_interval(xs)
    assert stats.clustered_interval(xs, None) == stats.median_interval(xs)
    with pytest.raises(ValueError, match="cluster ids"):
        stats.clustered_interval(xs, [0, 1])


def test_clusters_widen_the_interval_by_the_spread_between_processes():
    # Two processes whose own rounds are tight but sit 10% apart: the interval spans
    # both, with t(1) = 12.7 around the mean of the two process medians.
    xs = [1.0, 1.001, 0.999] * 4 + [1.1, 1.101, 1.099] * 4
    iv = stats.clustered_interval(xs, [0] * 12 + [1] * 12)
    assert iv.low <= 1.0 and iv.high >= 1.1
    assert iv.high == pytest.approx(1.05 + 12.706 * 0.0707107 / math.sqrt(2), rel=1e-3)
    assert stats.t975(2) == 4.303 and stats.t975(100) == 1.96


def _process(rng, k, rounds=40, slow=0.3):
    """The H200 host as measured: each process draws a state (30% of them ~1.5x slower
    at launching) and a ~3% offset of its own; rounds jitter by 2% within it."""
    xs, cl = [], []
    for p in range(k):
        f = (1.5 if rng.random() < slow else 1.0) * math.exp(rng.gauss(0, 0.03))
        for _ in range(rounds // k):
            xs.append(7.0 * f * math.exp(rng.gauss(0, 0.02)))
            cl.append(p)
    return stats.clustered_interval(xs, cl)


@pytest.mark.parametrize("k, least, most", [(1, 0.0, 0.3), (3, 0.8, 1.0)])
def test_another_runs_median_falls_inside_as_often_as_the_processes_allow(k, least, most):
    """What bench/repeatability.py checks on the GPU, on a model of the host: with one
    process a run's interval rarely holds another run's median (between-process states
    are invisible to it); with three processes pooled as clusters, in 80% or more."""
    rng = random.Random(5)
    hits = total = 0
    for _ in range(150):
        runs = [_process(rng, k) for _ in range(3)]
        for a in range(3):
            for b in range(3):
                if a != b:
                    total += 1
                    hits += runs[a].contains(runs[b].median)
    assert least <= hits / total <= most
