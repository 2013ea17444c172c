"""Host and GPU apart: a point's step split into GPU work, launch cost and the rest, and its
speedup projected to a reference launch cost (issue 39; docs/MEASUREMENT.md, "Host and GPU
apart").

What CUDA graphs buy is mostly a property of the host: how long it takes to issue a kernel.
The same `mlp` sweep on the same H200 read 6.8x at batch 1 when a launch cost 7 us and
10.4x when it cost 10 us. The runner measures the pieces already: the GPU's busy time in a
profiled step, the launches a step, the host's issue time a step (the rounds' host_ms), and
the launch cost of a trivial kernel in every round (the probe). This module puts them
together; it is standard-library only, so the pages, the CLI and the reports share it.

The split (figures a step, summing to the step):
    gpu      the GPU's busy time (capped at the step)
    launch   of the time the GPU waits, what the launches cost at the probe's rate:
             launches x the round's launch cost (capped at the waiting time)
    rest     the rest of the waiting: Python, the framework's dispatcher, syncs
A launch-bound eager step is mostly `launch` and `rest`; a GPU-bound one mostly `gpu`.

The projection: the host's issue time a step scales with its launch cost (the whole
host path, Python included, runs on the same slow or quick CPU), and a step is the longer
of what the host issues and what the GPU runs, as with an asynchronous queue:
    step(L) = max(gpu_busy, host_ms_per_step x L / launch_us)
Checked on the H200 sample `mlp` sweep, round by round (the eager step predicted from
that round's probe against the one measured): 87-98% of rounds within 10% at every batch
size, median error 2-7% (bench/host_split_check.py prints it for any bundle).
The speedup at a reference launch cost L is eager's step(L) over the mode's step(L).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contract.measurement import Measurement
from contract.numbers import number_or_none, percentile

# (gpu_busy_ms, host_ms_per_step, launch_us): what projected_step takes of a point.
HostFigures = tuple[float | None, float | None, float | None]

# Reference launch costs (us a launch) that speedups are projected to: a fast server CPU,
# a typical one, a slow or busy one. The lent H200's host read 6.6-10 us.
REFERENCE_LAUNCH_US = (5.0, 10.0, 20.0)
# A mode whose host issue time is at least this share of its step is host-bound: its step
# follows the host's launch cost (docs/MEASUREMENT.md, "Host and GPU apart"). The rounds
# judge `noisy` by it (runner/core/rounds.py) and the history (runner/history/) picks the
# figure a change is judged on by it: one threshold for both.
HOST_BOUND_SHARE = 0.8
# How the split's three parts are named wherever they are shown.
PARTS = {"gpu": "GPU busy", "launch": "launch cost (launches x probe)",
         "rest": "rest of the host (Python, dispatcher, syncs)"}


@dataclass(frozen=True)
class StepSplit:
    """One step's time in three parts (ms); they add up to step_ms."""

    step_ms: float
    gpu_ms: float
    launch_ms: float
    rest_ms: float

    def share(self, part: str) -> float:
        return getattr(self, f"{part}_ms") / self.step_ms if self.step_ms > 0 else 0.0


def split(step_ms: float | None, gpu_busy_ms: float | None, launches_per_step: float | None,
          launch_us: float | None) -> StepSplit | None:
    """The step's three parts; None where a figure is missing (a CPU point has no GPU busy
    time, an old bundle no launch cost)."""
    step, gpu = number_or_none(step_ms), number_or_none(gpu_busy_ms)
    n, cost = number_or_none(launches_per_step), number_or_none(launch_us)
    if step is None or gpu is None or n is None or cost is None or step <= 0:
        return None
    gpu = min(max(gpu, 0.0), step)
    waiting = step - gpu
    launch = min(waiting, max(n, 0.0) * cost / 1e3)
    return StepSplit(step_ms=step, gpu_ms=gpu, launch_ms=launch, rest_ms=waiting - launch)


def host_bound(step_ms: float | None, host_ms_per_step: float | None) -> bool:
    """Does the host set this step? Its issue time a step against the step (medians);
    False where either is unknown."""
    step, host = number_or_none(step_ms), number_or_none(host_ms_per_step)
    return step is not None and host is not None and step > 0 \
        and host >= HOST_BOUND_SHARE * step


def projected_step(gpu_busy_ms: float | None, host_ms_per_step: float | None,
                   launch_us: float | None, at_us: float) -> float | None:
    """The step at another launch cost `at_us`: max(GPU busy, host issue time scaled by
    at_us / launch_us). None without the figures."""
    gpu, host = number_or_none(gpu_busy_ms), number_or_none(host_ms_per_step)
    cost = number_or_none(launch_us)
    if gpu is None or host is None or cost is None or cost <= 0:
        return None
    return max(gpu, host * at_us / cost)


def projected_speedup(eager: HostFigures, mode: HostFigures, at_us: float) -> float | None:
    """eager's projected step over the mode's, each given as (gpu_busy_ms,
    host_ms_per_step, launch_us)."""
    e, m = projected_step(*eager, at_us=at_us), projected_step(*mode, at_us=at_us)
    if e is None or m is None or m <= 0:
        return None
    return e / m


@dataclass(frozen=True)
class RoundCheck:
    """The projection held against the rounds of one point: each round's step predicted
    from that round's launch cost, beside the one measured."""

    measured_ms: tuple[float, ...]
    predicted_ms: tuple[float, ...]
    launch_us: tuple[float, ...]

    @property
    def errors(self) -> list[float]:
        return [p / m - 1 for p, m in zip(self.predicted_ms, self.measured_ms, strict=True)]

    def within(self, tolerance: float = 0.10) -> float:
        """The share of rounds predicted within `tolerance`."""
        errs = self.errors
        return sum(abs(e) <= tolerance for e in errs) / len(errs) if errs else 0.0

    @property
    def median_error(self) -> float:
        return percentile([abs(e) for e in self.errors], 50) if self.errors else 0.0


def check_rounds(samples_ms: Sequence[float], launch_us_rounds: Sequence[float],
                 gpu_busy_ms: float | None, host_ms_per_step: float | None
                 ) -> RoundCheck | None:
    """Predict each round's step from its probe (projected_step with the point's median
    launch cost as the reference it was measured at). None without the figures or when
    the rounds and probes do not pair."""
    if not samples_ms or len(samples_ms) != len(launch_us_rounds):
        return None
    med = percentile(list(launch_us_rounds), 50)
    preds = [projected_step(gpu_busy_ms, host_ms_per_step, med, u) for u in launch_us_rounds]
    if any(p is None for p in preds):
        return None
    return RoundCheck(tuple(samples_ms), tuple(p for p in preds if p is not None),
                      tuple(launch_us_rounds))


def of(m: Measurement) -> StepSplit | None:
    """A Measurement's split, from its own stored figures (launches: host launches plus
    graph launches, each costing one launch of the host's)."""
    n = m.launches.host_launches_per_step
    if n is not None and m.launches.graph_launches_per_step is not None:
        n = n + m.launches.graph_launches_per_step
    return split(m.timing.step_ms, m.launches.gpu_busy_ms, n, m.intervals.launch_us)


def host_figures(m: Measurement) -> HostFigures:
    """(gpu_busy_ms, host_ms_per_step, launch_us): what projected_step takes."""
    return (m.launches.gpu_busy_ms, m.timing.host_ms_per_step, m.intervals.launch_us)


def fill(ms: dict[str, Measurement]) -> None:
    """Write each point's split and projected speedups into its record (mode -> the
    Measurement of one batch size). Called when a point is done and again whenever a
    --processes pass moves its step; a figure that cannot be made is left None."""
    eager = ms.get("eager")
    for mode, m in ms.items():
        s = of(m) if m.status == "ok" else None
        m.split.gpu_ms = s.gpu_ms if s else None
        m.split.launch_ms = s.launch_ms if s else None
        m.split.rest_ms = s.rest_ms if s else None
        at = None
        if eager is not None and mode != "eager" and m.status == "ok" \
                and eager.status == "ok":
            got = {f"{u:g}": projected_speedup(host_figures(eager), host_figures(m), u)
                   for u in REFERENCE_LAUNCH_US}
            at = {k: v for k, v in got.items() if v is not None} or None
        m.split.speedup_at_launch_us = at


def point_split(m: Measurement) -> StepSplit | None:
    """The point's stored split (bundle version 6), else one computed from its own
    figures (of), so a reader does not depend on the bundle's age."""
    parts = [number_or_none(v) for v in (m.split.gpu_ms, m.split.launch_ms, m.split.rest_ms)]
    step = number_or_none(m.timing.step_ms)
    if step is not None and step > 0 and all(p is not None for p in parts):
        return StepSplit(step, *(float(p) for p in parts if p is not None))
    return of(m)


def speedups_at_launch(m: Measurement, eager: Measurement | None) -> dict[float, float]:
    """The point's speedup projected to each reference launch cost (us -> x): the stored
    details.speedup_at_launch_us, else computed from both points' figures (`eager`: the
    eager point at its batch size, or None)."""
    stored = m.split.speedup_at_launch_us
    if isinstance(stored, dict) and stored:
        out = {}
        for k, v in stored.items():
            us, x = number_or_none(k), number_or_none(v)
            if us is not None and x is not None:
                out[us] = x
        return out
    if eager is None or m.mode == "eager":
        return {}
    got = {u: projected_speedup(host_figures(eager), host_figures(m), u)
           for u in REFERENCE_LAUNCH_US}
    return {u: x for u, x in got.items() if x is not None}


def busy_fraction(m: Measurement) -> float | None:
    """The GPU's busy time over the step (1.0: no launch gap left); None if unknown."""
    busy, step = number_or_none(m.launches.gpu_busy_ms), number_or_none(m.timing.step_ms)
    return None if busy is None or not step else busy / step


def host_launch_ms(m: Measurement) -> float | None:
    """What the host spends launching a step: host launches x the launch cost (ms)."""
    n = number_or_none(m.launches.host_launches_per_step)
    us = number_or_none(m.intervals.launch_us)
    return None if n is None or us is None else n * us / 1000.0


def judged_text(m: Measurement) -> str | None:
    """What `noisy` was judged on, e.g. 'host-normalised: ±6.1% (target ±10%)'; None
    where the runner did not say (bundles before version 6)."""
    on = m.intervals.judged_on
    half = number_or_none(m.intervals.judged_half_width)
    target = number_or_none(m.intervals.target_half_width)
    if not on and half is None:
        return None
    text = str(on or "the figure")
    if half is not None:
        text += f": ±{half:.1%}"
    if target is not None:
        text += f" (target ±{target:.1%})"
    return text


__all__ = ["HOST_BOUND_SHARE", "PARTS", "REFERENCE_LAUNCH_US", "RoundCheck", "StepSplit",
           "busy_fraction", "check_rounds", "fill", "host_bound", "host_figures",
           "host_launch_ms", "judged_text", "of", "point_split", "projected_speedup",
           "projected_step", "speedups_at_launch", "split"]
