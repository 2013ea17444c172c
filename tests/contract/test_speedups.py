"""The rules over a run's points, once, over records (contract/speedups.py, noise.py,
comparability.py): speedup and its verdict, each mode's best, break-even, payback, noise
badges and counts, a ratio's interval, and what makes runs comparable."""

from __future__ import annotations

import math

import pytest

from contract import bundle as fmt
from contract import noise
from contract import speedups as sp
from contract.comparability import comparability
from db.samples import SAMPLES
from tests.records import headers, points_of, pts
from tests.synthetic import sweep_bundle

PUBLISHED = SAMPLES / "published-l40s-day25.json"


def _by(found):
    return {(s.mode, s.batch_size): s for s in found}


def test_speedup_is_eager_over_mode_per_batch_and_skips_failed_points():
    p = pts([("eager", 8, 2.0), ("compile", 8, 1.0), ("eager", 64, 3.0),
             ("compile", 64, None), ("cuda-graph", 128, 0.5)])
    got = {k: s.speedup for k, s in _by(sp.speedups(p)).items()}
    assert got == {("eager", 8): 1.0, ("eager", 64): 1.0, ("compile", 8): 2.0}


def test_speedup_uses_a_points_own_eager_reference():
    p = pts([("eager", 8, 1.124), ("cuda-graph", 8, 0.113, {"details":
                                                           {"eager_reference_ms": 1.116}})])
    s = _by(sp.speedups(p))[("cuda-graph", 8)]
    assert s.speedup == pytest.approx(1.116 / 0.113) and s.eager_ms == pytest.approx(1.116)


def test_largest_speedup_per_mode_and_where():
    p = pts([("eager", 8, 2.0), ("eager", 64, 4.0), ("compile", 8, 1.0), ("compile", 64, 1.0),
             ("reduce-overhead", 8, 0.5), ("reduce-overhead", 64, 2.0)])
    best = {b.mode: b for b in sp.mode_bests(sp.speedups(p))}
    assert (best["compile"].batch_size, best["compile"].speedup) == (64, 4.0)
    assert (best["reduce-overhead"].batch_size, best["reduce-overhead"].speedup) == (8, 4.0)
    assert "eager" not in best


def test_no_speedup_without_any_ok_point():
    p = pts([("eager", 8, None), ("compile", 8, None)])
    assert sp.speedups(p) == [] and sp.mode_bests(sp.speedups(p)) == ()
    assert sp.break_even(p).status == "unknown"


def _ro_vs_compile(ratios):
    rows = []
    for b, r in ratios.items():
        rows += [("compile", b, r * 1.0), ("reduce-overhead", b, 1.0)]
    return pts(rows)


def test_break_even_where_gain_drops_below_threshold_for_good():
    be = sp.break_even(_ro_vs_compile({8: 5.0, 64: 1.05, 512: 1.3, 4096: 1.05, 8192: 1.0}))
    # 64 dips below but 512 gains again: the break-even is where the tail starts.
    assert (be.status, be.batch_size, be.last_gaining) == ("crosses", 4096, 512)


def test_break_even_never_and_always():
    assert sp.break_even(_ro_vs_compile({8: 3.0, 64: 1.2})).status == "never-below"
    be = sp.break_even(_ro_vs_compile({8: 1.05, 64: 1.0}))
    assert (be.status, be.batch_size) == ("always-below", 8)


def test_break_even_of_the_published_figures():
    be = sp.break_even(points_of(fmt.read(PUBLISHED)))
    assert (be.status, be.batch_size, be.last_gaining) == ("crosses", 8192, 8)
    assert dict(be.ratios)[8] == pytest.approx(0.960 / 0.119)


def test_break_even_prefers_the_paired_ratio_over_compile():
    vs = {"details": {"vs_compile": {"median": 1.05, "low": 1.0, "high": 1.1}}}
    be = sp.break_even(pts([("compile", 8, 3.0), ("reduce-overhead", 8, 1.0),
                            ("compile", 64, 1.2), ("reduce-overhead", 64, 1.0, vs)]))
    assert dict(be.ratios) == {8: 3.0, 64: 1.05}
    assert (be.status, be.batch_size) == ("crosses", 64)


def test_payback_steps_round_up_and_never_when_slower():
    p = pts([("eager", 8, 2.0), ("compile", 8, 1.5, {"setup_s": 1.0}),
             ("reduce-overhead", 8, 2.5, {"setup_s": 3.0}), ("cuda-graph", 8, 1.0)])
    pay = {k: sp.payback(s) for k, s in _by(sp.speedups(p)).items()}
    assert pay[("compile", 8)].steps == math.ceil(1000 / 0.5)
    assert pay[("reduce-overhead", 8)].never and pay[("reduce-overhead", 8)].steps is None
    assert pay[("cuda-graph", 8)].steps is None  # setup unknown, not 0
    assert not pay[("cuda-graph", 8)].never


def ci(x, lo, hi, **extra):
    """Interval fields of one non-eager point (speedup and its bounds)."""
    return {"speedup": x, "speedup_ci_low": lo, "speedup_ci_high": hi, **extra}


# cuda-graph over eager: batch 4 is a spike (12.9x) whose interval is wide; batch 8's lead
# is the one to be sure of. Eager 1.0 ms everywhere.
SPIKE = [("eager", b, 1.0) for b in (1, 4, 8, 16, 32)] + [
    ("cuda-graph", 1, 0.24, ci(4.1, 4.0, 4.2)),
    ("cuda-graph", 4, 0.078, ci(12.9, 6.0, 20.0)),
    ("cuda-graph", 8, 0.125, ci(8.0, 7.8, 8.2)),
    ("cuda-graph", 16, 0.13, ci(7.7, 7.0, 8.5)),
    ("cuda-graph", 32, 0.2, ci(5.0, 4.9, 5.1))]


def test_speedups_use_the_stored_paired_ratio_and_its_interval():
    p = pts([("eager", 8, 2.0), ("compile", 8, 1.0, ci(1.9, 1.8, 2.05)), ("cuda-graph", 8, 0.5)])
    by = _by(sp.speedups(p))
    c = by[("compile", 8)]
    assert (c.speedup, c.ci_low, c.ci_high) == (1.9, 1.8, 2.05)  # paired, not 2.0 / 1.0
    g = by[("cuda-graph", 8)]
    assert g.speedup == 4.0 and g.ci_low is None  # ratio of medians, no invented interval
    assert by[("eager", 8)].speedup == 1.0 and by[("eager", 8)].verdict is None


def test_largest_speedup_ranks_by_lower_bound_and_reports_ties():
    best = sp.mode_bests(sp.speedups(pts(SPIKE)))[0]
    # By median batch 4 (12.9x) would win; its lower bound (6.0) is below batch 8's (7.8).
    assert (best.batch_size, best.speedup) == (8, 8.0)
    # 8.0x lies inside batch 4's and batch 16's intervals, not batch 1's or 32's.
    assert best.ties == (4, 8, 16)


def test_largest_speedup_without_intervals_keeps_the_median_ranking():
    p = points_of(sweep_bundle(intervals=False))
    found = sp.speedups(p)
    best = {b.mode: b for b in sp.mode_bests(found)}
    assert best["cuda-graph"].speedup == max(s.speedup for s in found
                                             if s.mode == "cuda-graph")
    assert all(b.ci_low is None and b.ci_high is None and len(b.ties) == 1
               for b in best.values())


def test_ratio_interval_and_within_noise_verdict():
    assert noise.ratio_interval(1.9, 2.1, 0.95, 1.05) == pytest.approx((1.9 / 1.05,
                                                                           2.1 / 0.95))
    assert noise.ratio_interval(1.0, None, 1.0, 1.0) is None
    assert noise.ratio_verdict((1.81, 2.21)) == "faster"
    assert noise.ratio_verdict((0.4, 0.6)) == "slower"
    assert noise.ratio_verdict((0.97, 1.08)) == "within noise"
    assert noise.ratio_verdict(None) == "no interval"
    overlap = noise.ratio_interval(1.00, 1.10, 1.05, 1.20)
    assert overlap[0] <= 1 <= overlap[1]


def test_point_badges_and_run_noise_summary():
    p = points_of(sweep_bundle(
        batches=(1, 8), overrides={("cuda-graph", 8): {"noisy": True, "stop_reason": "budget"},
                                   ("compile", 1): {"host_unstable": True}},
        failing={("eager", 8): "boom"}))
    badges = {(m.mode, m.batch_size): noise.point_badge(m) for m in p}
    assert badges[("cuda-graph", 8)] == "noisy"
    assert badges[("compile", 1)] == "host unstable"
    assert badges[("eager", 8)] == "" and badges[("eager", 1)] == "ok"
    assert noise.counts(p) == noise.NoiseCounts(7, 7, 1, 1)
    assert noise.run_noise(p) == ("noisy", "1 of 7 points noisy, 1 of 7 points host unstable")
    assert noise.run_noise(points_of(sweep_bundle(batches=(8,))))[0] == "ok"


@pytest.mark.parametrize("doc", [fmt.read(PUBLISHED), sweep_bundle(intervals=False)],
                         ids=["published-v1", "synthetic-v2"])
def test_old_runs_have_no_interval_badge(doc):
    p = points_of(doc)
    badges = {noise.point_badge(m) for m in p}
    assert badges <= {"no interval", ""} and "no interval" in badges
    assert noise.run_noise(p) == ("no interval", "no interval")
    assert noise.launch_cost(p) is None


def test_launch_cost_over_a_runs_usable_points():
    a = points_of(sweep_bundle(batches=(1, 8), launch_us=12.0, overrides={
        ("compile", 8): {"launch_us": 19.0}, ("eager", 1): {"launch_us": 7.0}}))
    cost = noise.launch_cost(a)
    assert (cost.median, cost.low, cost.high, cost.points) == (12.0, 7.0, 19.0, 8)


def test_comparability_names_each_differing_field_and_run():
    assert comparability(headers({"id": 1}, {"id": 2})) == []
    # dtype recorded among the parameters on one side only is not a difference.
    assert comparability(headers({"id": 1}, {"id": 2, "workload_params": {
        "depth": 2, "dtype": "float32"}})) == []
    w = comparability(headers({"id": 1}, {"id": 2, "workload_params": {"depth": 4},
                                          "dtype": "bfloat16"}))
    assert len(w) == 2
    assert "workload parameters" in w[0] and "run 2: depth=4" in w[0]
    assert "dtype" in w[1] and "bfloat16" in w[1]
