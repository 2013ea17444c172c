"""Change points across runs (issue 40): synthetic series with known steps (a regression,
an improvement, none, noise without a step), the verdicts the one rule gives them, the
series' orders, and host-bound points judged on the host-normalised step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contract import verdict as vd
from runner.history import changes as hc
from runner.history import series as hs
from tests.synthetic import points_frame, step_figures, sweep_bundle


def _series(values, rel=0.01):
    """One (mode, batch) series as series.judged gives it: each run's own 95% interval
    +-rel around its figure."""
    return pd.DataFrame({"run_id": range(1, len(values) + 1), "value": values,
                         "low": [v * (1 - rel) for v in values],
                         "high": [v * (1 + rel) for v in values]})


def _changes(values, rel=0.01):
    return hc.series_changes(_series(values, rel), "cuda-graph", 8, hs.MEASURED)


def test_a_step_up_is_one_regression_bracketed_by_the_runs_around_it():
    found = _changes([1.00, 1.01, 0.99, 1.00, 1.30, 1.31, 1.29, 1.30])
    assert len(found) == 1
    cp = found[0]
    assert (cp.before_run, cp.after_run, cp.index) == (4, 5, 4)
    assert (cp.before_runs, cp.after_runs) == (4, 4)
    assert cp.before_median == pytest.approx(1.0) and cp.after_median == pytest.approx(1.30)
    assert cp.change == pytest.approx(0.30)
    assert cp.rule == vd.SLOWER and cp.verdict == hc.REGRESSION
    assert cp.ratio_high < 1 < 1 / cp.ratio_low * 2  # wholly below 1x, and known
    assert cp.text().startswith("regression: 1 -> 1.3 ms (+30.0%;")


def test_a_step_down_is_an_improvement():
    found = _changes([2.0, 2.02, 1.98, 2.0, 2.01, 1.5, 1.49, 1.51])
    assert [(c.after_run, c.verdict, c.rule) for c in found] == [(6, hc.IMPROVEMENT, vd.FASTER)]
    assert found[0].change == pytest.approx(-0.25, abs=0.01)


def test_a_flat_series_has_no_change_point():
    assert _changes([1.0, 1.002, 0.998, 1.001, 0.999, 1.0, 1.003, 0.997]) == []
    assert _changes([1.0] * 6) == []  # exactly flat: MIN_SIGMA keeps rounding from splitting


def test_noise_without_a_step_finds_no_regression():
    rng = np.random.default_rng(7)
    findings = 0
    for _ in range(100):
        values = list(np.exp(rng.normal(0.0, 0.03, int(rng.integers(5, 25)))))
        findings += any(c.verdict != hc.INCONCLUSIVE for c in _changes(values, rel=0.06))
    assert findings <= 3  # a change point now and then; judged a finding almost never


def test_the_newest_run_alone_can_be_the_change():
    found = _changes([1.0, 1.01, 0.99, 1.0, 1.01, 1.0, 1.25])
    assert [(c.after_run, c.after_runs, c.verdict) for c in found] == [(7, 1, hc.REGRESSION)]


def test_a_step_within_the_runs_own_intervals_is_not_a_finding():
    # Two runs 3% apart, each +-10%: a change point may be placed, but the rule cannot
    # call it either way.
    found = _changes([1.0, 1.03], rel=0.10)
    assert all(c.verdict == hc.INCONCLUSIVE and c.rule == vd.SAME for c in found)


def test_without_any_interval_two_runs_say_nothing():
    s = _series([1.0, 1.5]).assign(low=np.nan, high=np.nan)
    assert hc.series_changes(s, "eager", 8, hs.MEASURED) == []


def test_two_step_series_is_judged_segment_by_segment():
    found = _changes([1.0, 1.0, 1.01, 0.99, 1.2, 1.21, 1.19, 1.2, 1.0, 1.01, 0.99, 1.0])
    assert [(c.after_run, c.verdict) for c in found] == [(5, hc.REGRESSION),
                                                        (9, hc.IMPROVEMENT)]
    assert found[1].before_runs == 4 and found[1].after_runs == 4


def test_one_slow_release_in_the_middle_is_a_regression_then_an_improvement():
    # The spike moves two of the successive differences: the series' own noise estimate
    # waits for six runs, so that the median difference is still a quiet one.
    found = _changes([1.0, 1.01, 0.99, 1.3, 1.0, 1.0, 1.01])
    assert [(c.after_run, c.verdict) for c in found] == [(4, hc.REGRESSION),
                                                        (5, hc.IMPROVEMENT)]
    assert (found[0].after_runs, found[1].before_runs) == (1, 1)


def test_the_median_interval_of_many_runs_is_narrower_than_their_range():
    assert hc.median_rank(5) == 1 and hc.median_rank(9) == 2 and hc.median_rank(20) == 6
    lo, hi = hc.level_interval(list(range(1, 21)), [None] * 20, [None] * 20)
    assert (lo, hi) == (6, 15)
    assert hc.level_interval([2.0], [1.9], [2.1]) == (1.9, 2.1)
    assert hc.level_interval([2.0], [None], [None]) is None


# --- runs, orders and the host ------------------------------------------------------------

def _runs(torches, days):
    return pd.DataFrame({"id": range(1, len(torches) + 1), "torch_version": torches,
                         "created_at": pd.to_datetime([f"2026-01-{d:02d}" for d in days],
                                                      utc=True)})


def test_a_series_orders_by_torch_by_date_or_by_run():
    runs = _runs(["2.6.0", "2.5.1", "2.6.0.dev20250101", None], [1, 4, 2, 3])
    assert list(hs.order_runs(runs, "torch")["id"]) == [4, 2, 3, 1]
    assert list(hs.order_runs(runs, "date")["id"]) == [1, 3, 4, 2]
    assert list(hs.order_runs(runs, "run")["id"]) == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="'size' is not one of torch, date, run"):
        hs.order_runs(runs, "size")


def _point_runs(specs):
    """Runs and their points from synthetic bundles: specs are (torch, day, scale,
    eager batch-8 overrides)."""
    frames = []
    for i, (_, _, scale, over) in enumerate(specs, start=1):
        doc = sweep_bundle(scale=scale, batches=(8,), modes=("eager", "cuda-graph"),
                           overrides={("eager", 8): over} if over else None)
        frames.append(points_frame(doc, run_id=i))
    return _runs([s[0] for s in specs], [s[1] for s in specs]), pd.concat(frames)


def test_change_points_over_stored_runs_carry_runs_medians_and_verdicts():
    # torch 2.7 made every step 25% longer; the runs were stored out of order.
    runs, points = _point_runs([("2.7.0", 1, 1.25, None), ("2.5.1", 2, 1.0, None),
                                ("2.6.0", 3, 1.0, None), ("2.4.0", 4, 1.0, None)])
    fig, found = hc.change_points(runs, points, "torch")
    assert set(found["mode"]) == {"eager", "cuda-graph"}
    row = found[found["mode"] == "eager"].iloc[0]
    assert (row["before_run"], row["after_run"], row["verdict"]) == (3, 1, hc.REGRESSION)
    assert row["change"] == pytest.approx(0.25) and row["basis"] == hs.MEASURED
    assert list(fig[fig["mode"] == "eager"].sort_values("order")["run_id"]) == [4, 2, 3, 1]
    # By date the slow run is the first: the step is an improvement after it.
    _, by_date = hc.change_points(runs, points, "date")
    assert set(by_date["verdict"]) == {hc.IMPROVEMENT}
    assert set(by_date["before_run"]) == {1}


def _host_bound(launch_us, slower=1.0):
    """Eager at batch 8, host-bound: the host's time a step follows its launch cost."""
    step = 1.4016 * slower
    return {**step_figures(step), "launch_us": launch_us,
            "details": {"host_ms_per_step": step * 0.95}}


def test_a_slower_host_is_not_a_torch_regression():
    # The same torch on a host whose launches cost 15 us, not 10: eager's step is 50%
    # longer as measured, and the same at 10 us a launch.
    runs, points = _point_runs([("2.5.1", 1, 1.0, _host_bound(10.0)),
                                ("2.5.1", 2, 1.0, _host_bound(10.0)),
                                ("2.6.0", 3, 1.0, _host_bound(15.0, 1.5)),
                                ("2.6.0", 4, 1.0, _host_bound(15.0, 1.5))])
    fig, found = hc.change_points(runs, points, "torch")
    eager = fig[fig["mode"] == "eager"]
    assert set(eager["basis"]) == {hs.NORMALISED}
    assert eager["value"].max() / eager["value"].min() == pytest.approx(1.0)
    assert found[found["mode"] == "eager"].empty
    # Measured alone (no host figures), the same steps read as a regression.
    bare = points.copy()
    bare["details"] = [{} for _ in range(len(bare))]
    _, measured = hc.change_points(runs, bare, "torch")
    assert hc.REGRESSION in set(measured[measured["mode"] == "eager"]["verdict"])


def test_a_gpu_bound_point_is_judged_as_measured():
    # The GPU is busy 1.3 of the 1.4 ms; the host issues a step in 0.3 ms.
    gpu_bound = {"gpu_busy_ms": 1.3, "details": {"host_ms_per_step": 0.3}}
    m = hs.record(points_frame(sweep_bundle(batches=(8,), modes=("eager",),
                                            overrides={("eager", 8): gpu_bound})).iloc[0])
    got = hs.point_figures(m)
    assert got["host_bound"] is False and got["normalised_ms"] is not None
    basis, judged = hs.judged(pd.DataFrame([{"run_id": 1, **got}]))
    assert basis == hs.MEASURED and judged["value"].iloc[0] == got["measured_ms"]


def test_a_run_checked_against_its_baseline():
    base = points_frame(sweep_bundle(batches=(8, 64), modes=("eager", "cuda-graph")), 1)
    slow = points_frame(sweep_bundle(batches=(8, 64), modes=("eager", "cuda-graph"),
                                     scale=1.2), 2)
    checks = hc.check_points(base, slow)
    assert [(c.mode, c.batch_size) for c in checks] == [
        ("eager", 8), ("eager", 64), ("cuda-graph", 8), ("cuda-graph", 64)]
    assert all(c.verdict == hc.REGRESSION for c in checks)
    assert all(c.change == pytest.approx(0.2) for c in checks)
    assert all(c.fails(0.05) and not c.fails(0.25) for c in checks)
    same = hc.check_points(base, points_frame(sweep_bundle(batches=(8, 64)), 2))
    assert {c.rule for c in same} == {vd.SAME} and not any(c.fails(0.0) for c in same)


# --- what a check cannot see (issue 47, item 2) ------------------------------------------

def test_the_detectable_change_of_two_runs_is_where_their_intervals_part():
    before = _series([1.0], rel=0.02)
    after = _series([1.0], rel=0.03)
    d = hc.detectable_change(before, after)
    assert d == pytest.approx(1.02 / 0.97 - 1)
    # Moved by just more than that, the rule calls it slower; by just less, it cannot.
    for factor, rule in ((1 + d * 1.01, vd.SLOWER), (1 + d * 0.99, vd.SAME)):
        moved = _series([factor], rel=0.03)
        assert hc.judge(before, moved)[2] == rule
    no_interval = before.assign(low=np.nan, high=np.nan)
    assert hc.detectable_change(no_interval, after) == float("inf")


@pytest.mark.parametrize("rel", [0.005, 0.02, 0.08])
def test_the_detectable_step_is_the_smallest_the_change_points_call(rel):
    """The search runs the detector itself: a step just above what it returns is a
    regression at the newest run, one just below is not."""
    values = [1.0, 1.004, 0.997, 1.001, 0.999, 1.002, 1.0]
    series = _series(values, rel)
    d = hc.detectable_step(series, len(values) - 1)
    assert 0 < d < 1
    level = float(np.median(values[:-1]))
    for factor, found in ((1 + d * 1.01, True), (1 + d * 0.97, False)):
        moved = _series([*values[:-1], level * factor], rel)
        at = [c for c in hc.series_changes(moved, "eager", 8, hs.MEASURED)
              if c.index == len(values) - 1 and c.verdict == hc.REGRESSION]
        assert bool(at) == found, (factor, d)
    # Noisier runs hide more.
    assert d > hc.detectable_step(_series(values, rel / 2), len(values) - 1)


def test_a_first_run_or_runs_without_intervals_see_nothing():
    assert hc.detectable_step(_series([1.0, 1.0]), 0) == float("inf")
    bare = _series([1.0, 1.01]).assign(low=np.nan, high=np.nan)
    assert hc.detectable_step(bare, 1) == float("inf")


@pytest.mark.parametrize("verdict, change, detectable, outcome", [
    (hc.REGRESSION, 0.20, 0.02, hc.FAIL),
    (hc.REGRESSION, 0.03, 0.02, hc.OK),            # real, but under the threshold
    (hc.INCONCLUSIVE, 0.48, float("inf"), hc.CANNOT_TELL),
    (hc.INCONCLUSIVE, 0.01, 0.06, hc.CANNOT_TELL),  # a 5% slowdown would pass unseen
    (hc.INCONCLUSIVE, 0.01, 0.04, hc.OK),
    (hc.IMPROVEMENT, -0.30, 0.40, hc.OK),           # a slowdown is ruled out
    ("no change", 0.02, 0.03, hc.OK),
])
def test_a_point_is_ok_only_where_the_check_could_have_seen_a_regression(
        verdict, change, detectable, outcome):
    assert hc.outcome(verdict, change, detectable, 0.05) == outcome


def test_the_prefix_sum_cost_places_the_same_breakpoints_as_ruptures_own():
    """PrefixL2 is ruptures' CostL2 from prefix sums: the same change points."""
    import ruptures

    rng = np.random.default_rng(45)
    for _ in range(300):
        n = int(rng.integers(2, 40))
        x = rng.normal(0.0, 0.03, n)
        if rng.random() < 0.5:
            x[int(rng.integers(1, n)) if n > 1 else 0:] += rng.choice([-0.1, 0.1])
        pen = 3 * float(rng.uniform(0.005, 0.05)) ** 2 * np.log(n)
        x = x.reshape(-1, 1)
        theirs = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(x).predict(pen=pen)
        ours = ruptures.Pelt(custom_cost=hc.PrefixL2(), min_size=1, jump=1).fit(x)
        assert ours.predict(pen=pen) == theirs
