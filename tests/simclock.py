"""A synthetic host for the statistics tests: a clock whose steps cost a known amount,
scaled by a linear drift and a two-level host state, with per-block jitter.

Step time of mode m at virtual time t = base[m] * (1 + drift * t) * level(t) * jitter,
where level flips between 1 and `high` as a Markov process (the host's two states seen on
the H200: eager mlp batch 8 at ~0.85 or ~1.3 ms). Everything is seeded: tests stay
reproducible and never read the wall clock. The true speedup of m over eager is
base["eager"] / base[m]: drift and level hit both alike when they run close in time.
"""

from __future__ import annotations

import math
import random


class SimStep:
    """A step that only names its mode; `fail_after` makes it raise on that call."""

    def __init__(self, mode: str, fail_after: int | None = None):
        self.mode, self.fail_after, self.calls = mode, fail_after, 0

    def __call__(self):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError(f"{self.mode} broke")


class SimClock:
    def __init__(self, base_ms: dict[str, float], *, seed: int = 0, drift: float = 0.0,
                 high: float = 1.0, flip_per_s: float = 0.0, jitter: float = 0.01,
                 launch_us: float = 8.0):
        self.base, self.drift, self.high, self.flip = base_ms, drift, high, flip_per_s
        self.jitter, self.launch = jitter, launch_us
        self.rng = random.Random(seed)
        self.t = 0.0
        self.state_high = False

    def _advance(self, seconds: float) -> None:
        # The host flips state with rate flip_per_s (checked per elapsed interval).
        if self.flip and self.rng.random() < 1 - math.exp(-self.flip * seconds):
            self.state_high = not self.state_high
        self.t += seconds

    def factor(self) -> float:
        return (1 + self.drift * self.t) * (self.high if self.state_high else 1.0)

    def now(self) -> float:
        return self.t

    def sync(self) -> None:
        pass

    def block(self, step: SimStep, iters: int) -> tuple[float, float]:
        for _ in range(iters):
            step()
        ms = self.base[step.mode] * self.factor() * math.exp(self.rng.gauss(0, self.jitter))
        self._advance(ms * iters / 1e3)
        return ms, ms

    def probe(self) -> float:
        us = self.launch * self.factor() * math.exp(self.rng.gauss(0, self.jitter))
        self._advance(us * 200 / 1e6)
        return us
