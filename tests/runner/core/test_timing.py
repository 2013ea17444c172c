"""Timing primitives: presets, warm-up sizing, latency, the gc pause and the CPU clock.

The synthetic clock (tests/simclock.py) stands in for time: nothing here depends on how
fast this machine is."""

from __future__ import annotations

import dataclasses
import gc

import pytest

from runner.core.timing import TIMING_PRESETS, Clock, Stats, gc_paused, latency, warm_up
from tests.simclock import SimClock, SimStep


def test_stats_derive_from_raw_samples():
    assert Stats.of([]) is None
    s = Stats.of([1.0, 2.0, 3.0, 100.0])
    assert s.median == 2.5 and s.n == 4  # an outlier moves the mean, not the median
    assert s.spread == pytest.approx((s.p90 - s.p10) / 2.5)


def test_presets_grow_from_quick_to_thorough():
    q, s, t = (TIMING_PRESETS[k] for k in ("quick", "standard", "thorough"))
    for field in ("warmup_ms", "min_block_ms", "min_rounds", "max_rounds", "round_budget_s",
                  "latency_calls", "profile_steps"):
        assert getattr(q, field) < getattr(s, field) < getattr(t, field), field
    for c in (q, s, t):
        assert c.min_rounds >= 6  # fewer rounds give no 95% interval at all
        assert c.target_half_width == 0.02


class CountingClock(SimClock):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.syncs = 0

    def sync(self):
        self.syncs += 1


def test_warm_up_runs_its_time_and_sizes_blocks_from_the_rate():
    config = TIMING_PRESETS["standard"]  # 200 ms warm-up, 10 ms blocks
    clock = CountingClock({"eager": 0.5})
    step = SimStep("eager")

    def timed_step():  # the clock advances 0.5 ms per step, as a real step would
        step()
        clock._advance(0.5e-3)

    w = warm_up(timed_step, clock, config)
    assert w.steps == 400 and step.calls == 400
    assert w.seconds == pytest.approx(0.2)
    assert w.iters_per_block == 20  # 10 ms / 0.5 ms
    assert clock.syncs >= 400 // 8  # the host never races far ahead of the device


def test_warm_up_caps_the_block_of_a_no_op():
    clock = SimClock({})
    step_calls = []

    def no_op():
        step_calls.append(1)
        clock._advance(1e-6)

    # 1 us per step would need 50,000 steps per 50 ms block: capped at max_iters.
    config = dataclasses.replace(TIMING_PRESETS["quick"], min_block_ms=50, max_iters=1000)
    w = warm_up(no_op, clock, config)
    assert w.iters_per_block == config.max_iters


def test_latency_times_each_call_with_a_sync():
    clock = CountingClock({})

    def step():
        clock._advance(2e-3)

    lat = latency(step, clock, 5)
    assert lat == pytest.approx([2.0] * 5) and clock.syncs == 5


def test_gc_is_paused_while_timing_and_restored_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_cpu_clock_times_blocks_and_probes_launches():
    clock = Clock("cpu")
    calls = []
    device_ms, host_ms = clock.block(lambda: calls.append(1), 7)
    assert len(calls) == 7 and device_ms == host_ms >= 0
    us = clock.launch_probe(50)()
    assert us > 0
