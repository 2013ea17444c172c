"""One point's energy, as the record will carry it: typed here, JSON only at the edge.

Standard library only (the leaf): the runner fills these (runner/core/energy.py), the
bundle, the database and the pages read them back with `from_dict`. Units live in the
names (mJ per step, W, s). Unknown is None, never 0: where the counter is missing (CPU,
no nvidia-ml-py, a driver or a GPU without it) the figures are absent and
`unavailable_reason` says why; `to_dict` leaves absent figures out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


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
    def from_dict(cls, d: dict[str, Any]) -> EnergyWindow:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; figures that are None are left out (absent, never 0)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "windows":
                if v:
                    out["windows"] = [asdict(w) for w in v]
            elif v is not None:
                out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Energy | None:
        """Back from a record; None for a record from before energy was measured."""
        if not d:
            return None
        names = {f.name for f in fields(cls)} - {"windows"}
        kw = {k: v for k, v in d.items() if k in names}
        kw["windows"] = tuple(EnergyWindow.from_dict(w) for w in d.get("windows") or ())
        return cls(**kw)
