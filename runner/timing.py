"""Steady-state timing of one step callable: back-to-back blocks, raw samples kept.

The statistics (Stats, Measurement, percentile) are torch-free so the database layer and
tests can use them; time_step() imports torch only when it times a CUDA device.

Why blocks: one CUDA step of a launch-bound model lasts microseconds, below the events'
useful resolution, so a block runs `iters` steps between two events and a sample is the
block's time / iters. Why median and p10/p90: a stray context switch or clock dip
skews a mean, not a median; the spread says how much to trust it.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TimingConfig:
    warmup_ms: float  # steady-state warm-up after setup (MEASUREMENT.md: >= ~200 ms)
    min_block_ms: float  # a block lasts at least this long
    blocks: int  # timed blocks = samples
    latency_calls: int  # synchronized single calls for per-call latency
    profile_steps: int  # steps in the profiler's active window
    max_iters: int = 100_000  # per block, so a no-op step cannot spin for ages


TIMING_PRESETS: dict[str, TimingConfig] = {
    # For tests and smoke runs: figures are real but noisy.
    "quick": TimingConfig(warmup_ms=10, min_block_ms=2, blocks=5, latency_calls=10,
                          profile_steps=3),
    "standard": TimingConfig(warmup_ms=200, min_block_ms=20, blocks=20, latency_calls=100,
                             profile_steps=10),
    "thorough": TimingConfig(warmup_ms=500, min_block_ms=50, blocks=50, latency_calls=300,
                             profile_steps=20),
}


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in 0..100."""
    if not samples:
        raise ValueError("percentile of no samples")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Stats:
    median: float
    p10: float
    p90: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats | None:
        if not samples:
            return None
        return cls(percentile(samples, 50), percentile(samples, 10),
                   percentile(samples, 90), len(samples))

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: how noisy the samples are."""
        return (self.p90 - self.p10) / self.median if self.median > 0 else math.inf


@dataclass
class Measurement:
    """Raw samples of one point; every statistic is derived from them."""

    samples_ms: list[float] = field(default_factory=list)  # per-step time, one per block
    host_ms: list[float] = field(default_factory=list)  # host issue time per step, per block
    latency_ms: list[float] = field(default_factory=list)  # one synchronized call each
    iters_per_block: int = 0
    warmup_steps: int = 0
    phase_s: dict[str, float] = field(default_factory=dict)  # wall time of each phase

    @property
    def stats(self) -> Stats | None:
        return Stats.of(self.samples_ms)

    @property
    def latency(self) -> Stats | None:
        return Stats.of(self.latency_ms)

    @property
    def host(self) -> Stats | None:
        return Stats.of(self.host_ms)

    def __str__(self) -> str:
        s = self.stats
        if s is None:
            return "Measurement(no samples)"
        return (f"{s.median:.4f} ms/step (p10 {s.p10:.4f}, p90 {s.p90:.4f}, "
                f"{s.n} blocks x {self.iters_per_block} steps)")


class _Clock:
    """How a block is timed: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")
        if self.cuda:
            import torch

            self.torch = torch

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def block(self, step: Callable[[], object], iters: int) -> tuple[float, float]:
        """(device ms per step, host issue ms per step) of one block of `iters` steps."""
        self.sync()
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        host = (time.perf_counter() - t0) * 1e3
        if not self.cuda:
            return host / iters, host / iters
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / iters, host / iters


def time_step(step: Callable[[], object], device: str, config: TimingConfig,
              *, measurement: Measurement | None = None) -> Measurement:
    """Warm up, then time back-to-back blocks and synchronized single calls.

    The garbage collector is off during warm-up and blocks: a collection in the middle of
    a block would be charged to the step. It is restored afterwards.
    """
    m = measurement or Measurement()
    clock = _Clock(device)
    was_enabled = gc.isenabled()
    t_gc = time.perf_counter()
    gc.collect()  # garbage of setup is collected now, not during a block
    gc.disable()
    try:
        t0 = time.perf_counter()
        m.phase_s["gc"] = t0 - t_gc
        # Warm up for at least warmup_ms (and 3 steps); the rate it shows sizes a block.
        clock.sync()
        n, deadline = 0, t0 + config.warmup_ms / 1e3
        while n < 3 or time.perf_counter() < deadline:
            step()
            n += 1
            if n % 8 == 0:
                clock.sync()  # keep the host from racing far ahead of the device
        clock.sync()
        per_step_ms = max((time.perf_counter() - t0) * 1e3 / n, 1e-4)
        m.warmup_steps = n
        m.iters_per_block = max(1, min(config.max_iters,
                                       math.ceil(config.min_block_ms / per_step_ms)))
        t1 = time.perf_counter()
        m.phase_s["warmup"] = t1 - t0
        for _ in range(config.blocks):
            dev_ms, host_ms = clock.block(step, m.iters_per_block)
            m.samples_ms.append(dev_ms)
            m.host_ms.append(host_ms)
        t2 = time.perf_counter()
        m.phase_s["timed"] = t2 - t1
        for _ in range(config.latency_calls):
            c0 = time.perf_counter()
            step()
            clock.sync()
            m.latency_ms.append((time.perf_counter() - c0) * 1e3)
        m.phase_s["latency"] = time.perf_counter() - t2
    finally:
        if was_enabled:
            gc.enable()
    return m
