"""Timing primitives: presets, the block clock, warm-up and per-call latency.

The statistics are torch-free (runner/core/stats.py) so the database layer and tests can use
them; the clock imports torch only when it times a CUDA device. The rounds that time
several modes against each other are runner/core/rounds.py's.

Why blocks: one CUDA step of a launch-bound model lasts microseconds, below the events'
useful resolution, so a block runs `iters` steps between two events and a figure is the
block's time / iters. Why medians: a stray context switch or clock dip skews a mean, not
a median.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from contract.vocab import TIMINGS
from runner.core.stats import percentile


@contextmanager
def phase(into: dict, name: str, *, on_error: bool = False) -> Iterator[None]:
    """`with phase(phases, "warmup"):` puts the block's wall seconds in phases["warmup"]
    (the harness's own bookkeeping, details["phase_s"]; not a measurement). A block that
    raises records nothing unless on_error."""
    t0 = time.perf_counter()
    ok = False
    try:
        yield
        ok = True
    finally:
        if ok or on_error:
            into[name] = time.perf_counter() - t0

@dataclass(frozen=True)
class TimingConfig:
    warmup_ms: float  # steady warm-up per mode after setup (docs/MEASUREMENT.md, "Warm-up")
    min_block_ms: float  # one mode's block in a round lasts at least this long
    min_rounds: int  # rounds before adaptive stopping may end the point
    max_rounds: int  # rounds at most, whatever the intervals say
    round_budget_s: float  # timed rounds may last this long per mode of the batch size
    latency_calls: int  # synchronized single calls for per-call latency
    profile_steps: int  # steps in the profiler's active window
    target_half_width: float = 0.02  # stop once every speedup's 95% CI is within +-2%
    probe_launches: int = 200  # trivial launches per round for the host's launch cost
    max_iters: int = 100_000  # per block, so a no-op step cannot spin for ages


TIMING_PRESETS: dict[str, TimingConfig] = {
    # For tests and smoke runs: figures are real but noisy, intervals wide.
    "quick": TimingConfig(warmup_ms=10, min_block_ms=2, min_rounds=6, max_rounds=12,
                          round_budget_s=0.05, latency_calls=10, profile_steps=3),
    # Budget per mode 0.6 s of rounds against the 0.4 s of blocks timed per point before
    # rounds existed: a sweep costs at most ~1.3x what it did (bench/repeatability.py).
    "standard": TimingConfig(warmup_ms=200, min_block_ms=10, min_rounds=10, max_rounds=400,
                             round_budget_s=0.6, latency_calls=100, profile_steps=10),
    "thorough": TimingConfig(warmup_ms=500, min_block_ms=20, min_rounds=20, max_rounds=2000,
                             round_budget_s=2.0, latency_calls=300, profile_steps=20),
}
# The names are the contract's (the CLI, the form and the queue offer them); the figures here.
assert tuple(TIMING_PRESETS) == TIMINGS, "contract/vocab.py TIMINGS is out of step"


def for_processes(config: TimingConfig, processes: int) -> TimingConfig:
    """The preset for one of `processes` processes that pool their rounds: each gets an
    equal share of the rounds budget, so K processes cost K set-ups, not K x the timing."""
    if processes <= 1:
        return config
    return dataclasses.replace(config, round_budget_s=config.round_budget_s / processes)


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


def _done() -> None:
    pass


class Clock:
    """How a block is timed: CUDA events on a GPU, perf_counter on the CPU. Tests pass
    their own object with the same three methods (now, sync, block)."""

    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")
        if self.cuda:
            import torch

            self.torch = torch

    def now(self) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def fence(self) -> Callable[[], None]:
        """Mark the device's queue now; the callable returned waits until the device has
        done everything issued before the mark (a CUDA event). Nothing to wait for on the
        CPU, where a step is done when it returns."""
        if not self.cuda:
            return _done
        ev = self.torch.cuda.Event()
        ev.record()
        return ev.synchronize

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

    def launch_probe(self, launches: int) -> Callable[[], float]:
        """A probe of the host's launch cost: us per launch of a chain of `launches`
        trivial kernels on one element (runner/core/chain.py: the `kernel-chain`
        workload at its smallest), issued without a sync between (the queue never
        fills at a few hundred). On the CPU it times the same ops' dispatch."""
        import torch

        from runner.core.chain import chain

        t = torch.ones(1, device="cuda" if self.cuda else "cpu")

        def probe() -> float:
            self.sync()
            t0 = time.perf_counter()
            chain(t, launches)
            host = time.perf_counter() - t0
            self.sync()
            return host * 1e6 / launches

        return probe


@contextmanager
def gc_paused():
    """The garbage collector off while timing: a collection in the middle of a block
    would be charged to the step. Garbage made before is collected first."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class WarmUp:
    steps: int
    iters_per_block: int  # steps per block, so a block lasts about min_block_ms
    seconds: float


def warm_up(step: Callable[[], object], clock, config: TimingConfig) -> WarmUp:
    """Run the step for at least warmup_ms (and 3 steps); the rate it shows sizes a
    block. Call under gc_paused()."""
    clock.sync()
    t0 = clock.now()
    n, deadline = 0, t0 + config.warmup_ms / 1e3
    while n < 3 or clock.now() < deadline:
        step()
        n += 1
        if n % 8 == 0:
            clock.sync()  # keep the host from racing far ahead of the device
    clock.sync()
    elapsed = clock.now() - t0
    per_step_ms = max(elapsed * 1e3 / n, 1e-4)
    iters = max(1, min(config.max_iters, math.ceil(config.min_block_ms / per_step_ms)))
    return WarmUp(steps=n, iters_per_block=iters, seconds=elapsed)


def latency(step: Callable[[], object], clock, calls: int) -> list[float]:
    """Per-call latency (ms): one call, then a sync, `calls` times."""
    out = []
    for _ in range(calls):
        c0 = clock.now()
        step()
        clock.sync()
        out.append((clock.now() - c0) * 1e3)
    return out
