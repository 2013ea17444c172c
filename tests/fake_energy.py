"""A synthetic device with an energy counter that moves in steps, on an injected clock.

The device draws `idle_w` unless a step runs; a step of a mode advances the virtual clock
by its duration at that mode's power. The counter (FakeCounter, runner/core/energy_counter's
protocol) reports the energy integrated up to its last tick, as whole mJ: ticks every
`period_s` (80 ms, about NVML's cadence on the H200) from `phase_s`, optionally jittered,
and `lag_s` behind (a counter that reports energy sampled earlier). With `ramp_s`, the power
drawn follows a change of load with that time constant (a GPU's power does not jump from
idle to full: seen on the H100, bench/results/h100-memory-energy-probe.txt). Nothing reads
the wall clock unless `wall=True` (bench/energy_overhead.py on a CPU host: real steps,
fake joules).
"""

from __future__ import annotations

import bisect
import math
import random
import time


class FakeDevice:
    def __init__(self, *, idle_w: float = 60.0, period_s: float = 0.08, phase_s: float = 0.0,
                 lag_s: float = 0.0, jitter: float = 0.0, read_s: float = 0.0,
                 start_mj: float = 5e9, seed: int = 0, stuck: bool = False,
                 wall: bool = False, wall_power_w: float = 100.0, ramp_s: float = 0.0):
        self.idle_w, self.period, self.lag, self.read_s = idle_w, period_s, lag_s, read_s
        self.ramp_s, self.level = ramp_s, idle_w  # the power drawn right now
        self.stuck, self.wall, self.wall_power_w = stuck, wall, wall_power_w
        self.rng = random.Random(seed)
        self.jitter = jitter
        self.t0_wall = time.perf_counter()
        self.t = 0.0
        self.knot_t, self.knot_e = [0.0], [start_mj]  # cumulative energy, piecewise linear
        self.ticks = [phase_s]
        self.log: list[tuple[str, str]] = []  # ("step", mode) | ("sync", "") | ("read", "")
        self.syncs = self.reads = 0

    # The device's time and energy.
    def now(self) -> float:
        if self.wall:
            return time.perf_counter() - self.t0_wall
        return self.t

    def advance(self, seconds: float, power_w: float) -> None:
        if self.wall:
            return
        self.t += seconds
        self.knot_t.append(self.t)
        joules = power_w * seconds
        if self.ramp_s > 0:  # first-order approach from the level drawn to power_w
            decay = math.exp(-seconds / self.ramp_s)
            joules += (self.level - power_w) * self.ramp_s * (1 - decay)
            self.level = power_w + (self.level - power_w) * decay
        else:
            self.level = power_w
        self.knot_e.append(self.knot_e[-1] + joules * 1e3)

    def energy_at(self, t: float) -> float:
        """mJ integrated up to time t."""
        if self.wall:
            return self.knot_e[0] + self.wall_power_w * max(0.0, t) * 1e3
        t = max(0.0, t)
        i = bisect.bisect_right(self.knot_t, t)
        if i >= len(self.knot_t):
            return self.knot_e[-1]
        t0, t1 = self.knot_t[i - 1], self.knot_t[i]
        e0, e1 = self.knot_e[i - 1], self.knot_e[i]
        return e0 + (e1 - e0) * (t - t0) / (t1 - t0)

    def last_tick(self, t: float) -> float | None:
        while self.ticks[-1] <= t:
            gap = self.period * (1 + self.rng.uniform(-self.jitter, self.jitter))
            self.ticks.append(self.ticks[-1] + gap)
        i = bisect.bisect_right(self.ticks, t)
        return self.ticks[i - 1] if i else None

    # What the code under test sees.
    def step(self, mode: str, ms: float, power_w: float, fail_after: int | None = None):
        calls = [0]

        def run() -> None:
            calls[0] += 1
            if fail_after is not None and calls[0] > fail_after:
                raise RuntimeError(f"{mode} broke")
            self.log.append(("step", mode))
            self.advance(ms / 1e3, power_w)
        return run

    def sync(self) -> None:
        self.syncs += 1
        self.log.append(("sync", ""))

    def counter(self) -> FakeCounter:
        return FakeCounter(self)


class FakeCounter:
    name = "fake"

    def __init__(self, device: FakeDevice):
        self.d = device

    def read_mj(self) -> float:
        d = self.d
        d.reads += 1
        d.log.append(("read", ""))
        tick = d.last_tick(d.now())
        v = d.knot_e[0] if d.stuck or tick is None else d.energy_at(tick - d.lag)
        d.advance(d.read_s, d.idle_w)
        return float(math.floor(v))

    def now(self) -> float:
        return self.d.now()

    def sleep(self, seconds: float) -> None:
        if self.d.wall:
            time.sleep(seconds)
        self.d.advance(seconds, self.d.idle_w)
