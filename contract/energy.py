"""One point's energy, as the record will carry it: typed here, JSON only at the edge.

Standard library only (the contract): the runner fills these (runner/core/energy.py), the
bundle, the database and the pages read them back with `from_dict`. Units live in the
names (mJ per step, W, s). Unknown is None, never 0: where the counter is missing (CPU,
no nvidia-ml-py, a driver or a GPU without it) the figures are absent and
`unavailable_reason` says why; `to_dict` leaves absent figures out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, TypedDict, cast


class EnergyWindowJson(TypedDict, total=False):
    """An EnergyWindow as JSON (its fields; poll_s absent in older records)."""
    mode: str
    round: int
    mj: float
    steps: int
    seconds: float
    edge_s: float
    poll_s: float


class EnergyJson(TypedDict, total=False):
    """An Energy as JSON: its fields, each left out where unknown (never 0)."""
    energy_mj_per_step: float
    energy_mj_per_step_ci_low: float
    energy_mj_per_step_ci_high: float
    avg_power_w: float
    idle_power_w: float
    energy_above_idle_mj_per_step: float
    energy_gain: float
    energy_gain_ci_low: float
    energy_gain_ci_high: float
    windows: list[EnergyWindowJson]
    counter: str
    unavailable_reason: str


@dataclass(frozen=True)
class EnergyWindow:
    """One window of one mode, between two ticks of the counter (raw, kept in the record
    so every figure can be derived again)."""

    mode: str
    round: int  # which interleaved round of windows (windows of one round are paired)
    mj: float  # counter delta between the two ticks
    steps: int  # steps completed (synchronised) between the two detecting reads
    seconds: float  # host time between the two detecting reads
    edge_s: float  # how late each tick may have been seen, both edges summed
    poll_s: float = 0.0  # host time spent reading the counter inside the window

    @property
    def mj_per_step(self) -> float:
        return self.mj / self.steps

    @property
    def power_w(self) -> float:
        return self.mj / 1e3 / self.seconds

    @property
    def bound(self) -> float:
        """Relative bound on mj_per_step's quantisation error: the ticks are seen at most
        edge_s late in all, so the step count and the counter's span differ by at most
        that much time of the same work (see runner/core/energy.py)."""
        return self.edge_s / self.seconds

    @classmethod
    def from_dict(cls, d: EnergyWindowJson) -> EnergyWindow:
        names = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {k: v for k, v in d.items() if k in names}
        return cls(**kw)


@dataclass(frozen=True)
class IdlePower:
    """The device's power with nothing running, read before the point."""

    power_w: float
    seconds: float
    mj: float
    edge_s: float


@dataclass(frozen=True)
class Energy:
    """One mode's energy at one batch size: medians over interleaved windows, a 95%
    interval as runner/core/stats.py gives every figure, and the raw windows."""

    energy_mj_per_step: float | None = None
    energy_mj_per_step_ci_low: float | None = None
    energy_mj_per_step_ci_high: float | None = None
    avg_power_w: float | None = None  # all windows' energy over all their time
    idle_power_w: float | None = None
    energy_above_idle_mj_per_step: float | None = None  # may be < 0: not clamped
    # eager's energy per step over this mode's, paired per round (None for eager itself)
    energy_gain: float | None = None
    energy_gain_ci_low: float | None = None
    energy_gain_ci_high: float | None = None
    windows: tuple[EnergyWindow, ...] = ()
    counter: str | None = None  # which counter: "nvml GPU-..." or "fake"
    unavailable_reason: str | None = None

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None and self.energy_mj_per_step is not None

    @classmethod
    def unavailable(cls, reason: str, counter: str | None = None,
                    windows: tuple[EnergyWindow, ...] = ()) -> Energy:
        return cls(unavailable_reason=reason, counter=counter, windows=windows)

    def to_dict(self) -> EnergyJson:
        """JSON-able; figures that are None are left out (absent, never 0)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "windows":
                if v:
                    out["windows"] = [asdict(w) for w in v]
            elif v is not None:
                out[f.name] = v
        return cast(EnergyJson, out)

    @classmethod
    def from_dict(cls, d: EnergyJson | None) -> Energy | None:
        """Back from a record; None for a record from before energy was measured."""
        if not d:
            return None
        names = {f.name for f in fields(cls)} - {"windows"}
        kw: dict[str, Any] = {k: v for k, v in d.items() if k in names}
        kw["windows"] = tuple(EnergyWindow.from_dict(w) for w in d.get("windows") or ())
        return cls(**kw)


# --- energy per step: the windows' power over the timed step (issue 38) ------------------
#
# Why not the windows' own energy over their own steps: inside a window the mode runs in
# short blocks with a sync and counter reads between them, so a launch-bound step there is
# slower than the same step in the rounds (seen on the H200, mlp eager batch 1: 1.71 ms a
# step inside the windows against 1.15 ms timed) and its energy per step was inflated by
# the window's own overhead, exactly where graphs matter most. Power is what the windows
# measure well: the GPU draws it whether the host is slow or not. So energy per step is
# the windows' mean power times the step the page shows (the rounds' median), and the two
# can never disagree. docs/MEASUREMENT.md, "Energy per step", says the same.


def power_range(e: Energy) -> tuple[float, float] | None:
    """The mode's power with its uncertainty: the lowest and highest window power, each
    widened by that window's quantisation bound (the counter's ticks are seen late by up to
    edge_s). None without windows or power."""
    ws = [w for w in e.windows if w.seconds > 0 and w.mj > 0]
    if e.avg_power_w is None or not ws:
        return None
    lo = min(min(w.power_w * (1 - w.bound) for w in ws), e.avg_power_w)
    hi = max(max(w.power_w * (1 + w.bound) for w in ws), e.avg_power_w)
    return max(0.0, lo), hi


def on_step(e: Energy, step_ms: float | None, step_low: float | None = None,
            step_high: float | None = None) -> Energy:
    """`e` with its per-step figures from its power and the timed step: energy per step =
    mean power x step (W x ms = mJ), its interval = the power's range x the step's
    interval, above idle = (power - idle power) x step. The gain is left to with_gain.
    An unavailable `e`, or no step, comes back as it is."""
    if not e.available or e.avg_power_w is None or step_ms is None or step_ms <= 0:
        return e
    rng = power_range(e) or (e.avg_power_w, e.avg_power_w)
    lo_s = step_low if step_low is not None and 0 < step_low <= step_ms else step_ms
    hi_s = step_high if step_high is not None and step_high >= step_ms else step_ms
    above = None
    if e.idle_power_w is not None:
        above = (e.avg_power_w - e.idle_power_w) * step_ms
    return replace(e, energy_mj_per_step=e.avg_power_w * step_ms,
                   energy_mj_per_step_ci_low=rng[0] * lo_s,
                   energy_mj_per_step_ci_high=rng[1] * hi_s,
                   energy_above_idle_mj_per_step=above, energy_gain=None,
                   energy_gain_ci_low=None, energy_gain_ci_high=None)


def with_gain(e: Energy, base: Energy, speedup: float | None, speedup_low: float | None,
              speedup_high: float | None) -> Energy:
    """`e` with its energy gain over `base` (eager): eager's power over this mode's, times
    the speedup the point shows (eager's step over this mode's, paired per round), so
    gain = eager's energy per step / this mode's when the speedup is the ratio of the two
    steps. Interval: the power ratio's range times the speedup's interval; no interval
    where the speedup has none. Unchanged where either side has no power."""
    mine, theirs = power_range(e), power_range(base)
    if (speedup is None or not e.available or not base.available or mine is None
            or theirs is None or not e.avg_power_w or not base.avg_power_w):
        return e
    ratio = base.avg_power_w / e.avg_power_w
    low = high = None
    if speedup_low is not None and speedup_high is not None and mine[1] > 0 and mine[0] > 0:
        low = speedup_low * theirs[0] / mine[1]
        high = speedup_high * theirs[1] / mine[0]
    return replace(e, energy_gain=speedup * ratio, energy_gain_ci_low=low,
                   energy_gain_ci_high=high)


def above_idle_error_w(e: Energy, idle: IdlePower | Mapping[str, Any] | None
                       ) -> float | None:
    """How far the mode's power above idle may be off: each power's quantisation bound
    (the windows' largest, the idle window's own). None where either is unknown."""
    rng = power_range(e)
    if rng is None or e.idle_power_w is None or e.avg_power_w is None or not idle:
        return None
    if isinstance(idle, Mapping):
        seconds, edge = idle.get("seconds"), idle.get("edge_s")
    else:  # an IdlePower; a record of why there was none has no window to bound
        seconds, edge = getattr(idle, "seconds", None), getattr(idle, "edge_s", None)
    if not isinstance(seconds, (int, float)) or not isinstance(edge, (int, float)) \
            or seconds <= 0:
        return None
    bound = max(w.bound for w in e.windows)
    return e.avg_power_w * bound + e.idle_power_w * edge / seconds


def above_idle_within_error(e: Energy, idle: IdlePower | Mapping[str, Any] | None) -> bool:
    """Is the energy above idle inside the counter's error? Then a page shows "within the
    counter's error", never the (possibly negative) number."""
    err = above_idle_error_w(e, idle)
    if err is None or e.avg_power_w is None or e.idle_power_w is None:
        return False
    return abs(e.avg_power_w - e.idle_power_w) <= err
