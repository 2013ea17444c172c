"""Timing: torch-free statistics, and the block timer on the CPU."""

from __future__ import annotations

import gc
import time

import pytest

from runner.timing import TIMING_PRESETS, Measurement, Stats, TimingConfig, percentile, time_step


def test_percentile_matches_linear_interpolation():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(xs, 50) == 3.0
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 5.0
    assert percentile(xs, 10) == pytest.approx(1.4)
    assert percentile(xs, 90) == pytest.approx(4.6)
    assert percentile([7.0], 90) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_stats_and_measurement_derive_from_raw_samples():
    assert Stats.of([]) is None
    s = Stats.of([1.0, 2.0, 3.0, 100.0])
    assert s.median == 2.5 and s.n == 4  # an outlier moves the mean, not the median
    assert s.spread == pytest.approx((s.p90 - s.p10) / 2.5)
    m = Measurement(samples_ms=[1.0, 2.0, 3.0], iters_per_block=10)
    assert m.stats.median == 2.0 and m.latency is None
    assert "2.0000 ms/step" in str(m) and "3 blocks x 10 steps" in str(m)
    assert str(Measurement()) == "Measurement(no samples)"


def test_presets_are_ordered_by_effort():
    q, s, t = (TIMING_PRESETS[k] for k in ("quick", "standard", "thorough"))
    assert q.blocks < s.blocks < t.blocks
    assert s.min_block_ms >= 20 and s.blocks >= 20  # MEASUREMENT.md's floor
    assert s.warmup_ms >= 200 and s.latency_calls >= 100


def test_time_step_on_cpu_measures_a_known_step_with_gc_off():
    seen_gc = []

    def step():
        seen_gc.append(gc.isenabled())
        t = time.perf_counter() + 0.001
        while time.perf_counter() < t:  # busy-wait: sleep() overshoots unpredictably
            pass

    cfg = TimingConfig(warmup_ms=5, min_block_ms=5, blocks=4, latency_calls=3,
                       profile_steps=1)
    assert gc.isenabled()
    m = time_step(step, "cpu", cfg)
    assert gc.isenabled()  # restored
    n_timed = m.warmup_steps + 4 * m.iters_per_block
    assert not any(seen_gc[:n_timed])  # off during warm-up and blocks
    assert len(m.samples_ms) == 4 and len(m.latency_ms) == 3
    assert 4 <= m.iters_per_block <= 6  # ~5 ms blocks of ~1 ms steps
    assert 0.95 <= m.stats.median <= 1.5
    assert m.stats.p10 <= m.stats.median <= m.stats.p90
    assert set(m.phase_s) == {"gc", "warmup", "timed", "latency"}


def test_time_step_caps_iterations_of_a_no_op():
    cfg = TimingConfig(warmup_ms=1, min_block_ms=1000, blocks=1, latency_calls=0,
                       profile_steps=1, max_iters=50)
    m = time_step(lambda: None, "cpu", cfg)
    assert m.iters_per_block == 50 and m.latency_ms == []
