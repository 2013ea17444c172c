"""Interleaved rounds: every mode of one batch size timed in turn, until the intervals
are tight or the time budget is spent.

Why rounds: on a host whose launch cost drifts and flips between states (docs/MEASUREMENT.md,
"The host is part of the measurement"), timing eager for a second and then the graph for
a second compares two host states, not two modes. A round runs one short block of each
mode back to back, so whatever the host does hits every mode of that round alike; the
speedup is the median of the per-round paired ratios (runner/core/stats.py). The order
rotates each round (ABCD, BCDA, ...) so no mode always runs first after the probe or
last before it. This is what PyTorch's compiler benchmark runner (eager and compiled
alternated per repetition) and asv (interleaved rounds) do, for the same reason.

Why adaptive stopping (nvbench's noise threshold): a quiet point is done in a few rounds,
a noisy one gets more; each point records whether it converged or spent its budget.

Each round also times a short loop of trivial kernel launches: the host's launch cost
in that round, the figure that says whether the host changed state under the point.

Torch-free: the clock and the probe are parameters (runner/core/timing.Clock on real
hardware; tests pass a synthetic clock with drift and two-level noise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from contract.host_split import HOST_BOUND_SHARE
from contract.measurement import Measurement, PairedRatio
from contract.vocab import BASELINE_MODE as REFERENCE
from runner.core import stats
from runner.core.timing import TimingConfig


class RepeatError(RuntimeError):
    """A repeat process (--processes) failed to bring its rounds; its last line of output
    says why. Here, beside the Rounds it stands in for, so the point (which pools them)
    and the repeat launcher both name it without importing each other."""

@dataclass
class Rounds:
    """The raw figures of one batch size's rounds; every interval derives from them."""

    samples_ms: dict[str, list[float]] = field(default_factory=dict)  # mode -> per round
    host_ms: dict[str, list[float]] = field(default_factory=dict)  # host issue ms per step
    launch_us: list[float] = field(default_factory=list)  # probe per round
    order: list[tuple[str, ...]] = field(default_factory=list)  # modes in each round
    process: list[int] = field(default_factory=list)  # which process timed each round
    failed: dict[str, str] = field(default_factory=dict)  # mode -> error during rounds
    stop_reason: str | None = None  # converged | budget
    seconds: float = 0.0

    @property
    def n(self) -> int:
        return len(self.order)

    def extend(self, other: Rounds) -> None:
        """Pool another process's rounds of the same modes (`--processes`); they stay
        tagged with their process, so the intervals treat each process as a cluster."""
        first = max(self.process, default=-1) + 1
        for mode in self.samples_ms:
            if mode in other.samples_ms and len(other.samples_ms[mode]) == other.n:
                self.samples_ms[mode].extend(other.samples_ms[mode])
                self.host_ms[mode].extend(other.host_ms[mode])
            else:  # a mode that failed there: its rounds would no longer pair
                self.failed.setdefault(mode, other.failed.get(mode, "missing in a process"))
        self.launch_us.extend(other.launch_us)
        self.order.extend(other.order)
        self.process.extend(first + p for p in (other.process or [0] * other.n))
        self.seconds += other.seconds

    @property
    def processes(self) -> int:
        return len(set(self.process)) or 1


def rotation(modes: tuple[str, ...], r: int) -> tuple[str, ...]:
    """Round r's order: the modes rotated left by r."""
    k = r % len(modes) if modes else 0
    return modes[k:] + modes[:k]


def intervals(rounds: Rounds) -> dict[str, dict[str, stats.Interval | None]]:
    """Per mode: the step-time interval and, against eager when it ran, the speedup's."""
    ref = rounds.samples_ms.get(REFERENCE) if REFERENCE not in rounds.failed else None
    out = {}
    for mode, xs in rounds.samples_ms.items():
        if mode in rounds.failed:
            continue
        out[mode] = {"step": stats.clustered_interval(xs, rounds.process),
                     "speedup": (stats.ratio_interval(ref, xs, rounds.process)
                                 if ref and mode != REFERENCE else None)}
    return out


# The half-width a host-bound figure is held to, on its host-normalised rounds. Why not
# the preset's 2%: on the H200, normalising the rounds by their launch cost took the
# `mlp` speedups' half-widths from 8-88% down to 1-17% (three processes); what is left
# is the host's own jitter that no probe sees, and rounds spent on it buy nothing. A
# GPU-bound figure keeps the preset's target.
HOST_BOUND_TARGET = 0.10


def host_bound(rounds: Rounds, mode: str) -> bool:
    """Does the host set this mode's step? Its median issue time against its median step."""
    xs, host = rounds.samples_ms.get(mode) or [], rounds.host_ms.get(mode) or []
    if not xs or not host:
        return False
    return stats.percentile(host, 50) >= HOST_BOUND_SHARE * stats.percentile(xs, 50)


def normalised(rounds: Rounds, mode: str) -> list[float]:
    """The mode's per-round steps at the rounds' median launch cost: a host-bound mode's
    step scaled by median / that round's launch cost (contract/host_split.py says
    why the host path scales with it); a GPU-bound mode's as measured."""
    xs = rounds.samples_ms[mode]
    if not host_bound(rounds, mode) or len(rounds.launch_us) != len(xs) \
            or min(rounds.launch_us, default=0) <= 0:
        return list(xs)
    ref = stats.percentile(rounds.launch_us, 50)
    return [x * ref / u for x, u in zip(xs, rounds.launch_us, strict=True)]


@dataclass(frozen=True)
class Judged:
    """The interval a mode's figure is judged by, the target it is held to, and which
    figure that is ("measured", or "host-normalised" where the host sets it)."""
    interval: stats.Interval | None
    target: float
    basis: str

    @property
    def missed(self) -> bool:
        return self.interval is None or self.interval.half_width > self.target


def judged(rounds: Rounds, mode: str, target: float) -> Judged:
    """How a mode's figure (its speedup over eager, or its step without eager) is judged.
    A figure the host sets (either side host-bound, a launch cost per round) is judged on
    its host-normalised rounds against HOST_BOUND_TARGET (or the preset's, if looser):
    on the H200 a default sweep marked every point noisy, because a launch-bound figure
    follows the launch cost round by round (issue 39), and a flag on every point teaches
    readers to ignore it. A GPU-bound figure is judged as measured, on the preset's."""
    ref = rounds.samples_ms.get(REFERENCE) if REFERENCE not in rounds.failed else None
    ratio = ref is not None and mode != REFERENCE
    sides = (mode, REFERENCE) if ratio else (mode,)
    by_host = (any(host_bound(rounds, m) for m in sides)
               and len(rounds.launch_us) == len(rounds.samples_ms[mode]))
    if by_host:
        xs = normalised(rounds, mode)
        iv = (stats.ratio_interval(normalised(rounds, REFERENCE), xs, rounds.process)
              if ratio else stats.clustered_interval(xs, rounds.process))
        return Judged(iv, max(target, HOST_BOUND_TARGET), "host-normalised")
    xs = rounds.samples_ms[mode]
    iv = (stats.ratio_interval(ref, xs, rounds.process) if ratio and ref is not None
          else stats.clustered_interval(xs, rounds.process))  # (ratio: ref is not None)
    return Judged(iv, target, "measured")


def converged(rounds: Rounds, target: float) -> bool:
    """Every speedup over eager within its target (judged); without eager (or eager
    alone), every step time."""
    modes = [m for m in rounds.samples_ms if m not in rounds.failed]
    if not modes:
        return True  # nothing left to time
    has_ref = REFERENCE in modes and len(modes) > 1
    return not any(judged(rounds, m, target).missed for m in modes
                   if not has_ref or m != REFERENCE)


def run_rounds(steps: dict[str, Callable[[], object]], iters: dict[str, int], clock,
               config: TimingConfig, *, probe: Callable[[], float] | None = None) -> Rounds:
    """Time the modes in rotated rounds until converged or out of budget.

    A mode whose step raises is dropped from later rounds (its error recorded) and the
    rest go on: one broken mode must not cost the batch size's other figures."""
    modes = tuple(steps)
    r = Rounds(samples_ms={m: [] for m in modes}, host_ms={m: [] for m in modes})
    budget_s = config.round_budget_s * max(1, len(modes))
    t0 = clock.now()
    while True:
        active = tuple(m for m in modes if m not in r.failed)
        order = rotation(active, r.n)
        figures = {}
        for mode in order:
            try:
                figures[mode] = clock.block(steps[mode], iters[mode])
            except Exception as e:  # noqa: BLE001 - recorded per mode
                r.failed[mode] = f"{type(e).__name__}: {e}"[:500]
        for mode in modes:  # a failed mode's earlier rounds stay, unpaired from now on
            if mode in figures and mode not in r.failed:
                r.samples_ms[mode].append(figures[mode][0])
                r.host_ms[mode].append(figures[mode][1])
        if probe is not None:
            r.launch_us.append(probe())
        r.order.append(order)
        r.process.append(0)
        r.seconds = clock.now() - t0
        if len(r.failed) == len(modes):
            r.stop_reason = "budget"
            break
        if r.n >= config.min_rounds and converged(r, config.target_half_width):
            r.stop_reason = "converged"
            break
        # The budget ends a point only past min_rounds: fewer rounds give no interval
        # at all (6 at least for 95%), and a busy host must not turn a point into one
        # with no interval (nor a test that counts rounds red).
        if r.n >= config.max_rounds or (r.n >= config.min_rounds and r.seconds >= budget_s):
            r.stop_reason = "budget"
            break
    return r


def store_rounds(ms: dict[str, Measurement], modes_timed: list[str], r: Rounds,
                 config: TimingConfig) -> list[str]:
    """Write the figures the rounds give (step time and speedup with their intervals,
    noise, launch cost, how many processes they pool) into each timed mode's point;
    returns the modes the rounds say failed (made errors here). Called once with this
    process's rounds, and again (runner/core/sweep.py) each time a `--processes` pass
    adds its rounds to a point already stored."""
    ivs = intervals(r)
    unstable = stats.host_unstable(r.launch_us, clusters=r.process)
    launch = stats.median_interval(r.launch_us)
    compile_ = r.samples_ms.get("compile") if "compile" not in r.failed else None
    failed = []
    for mode in modes_timed:
        m = ms[mode]
        if mode in r.failed:
            m.status, m.message = "error", r.failed[mode]
            failed.append(mode)
            continue
        t, iv = m.timing, m.intervals
        iv.processes = r.processes
        if r.processes > 1:  # which process timed each round: the clusters
            iv.round_process = list(r.process)
        xs, host = r.samples_ms[mode], r.host_ms[mode]
        # A mode that did not fail has a sample in every round (run_rounds, at least one):
        # its step interval is never None.
        step, speedup = cast(stats.Interval, ivs[mode]["step"]), ivs[mode]["speedup"]
        t.step_ms, t.step_ms_p10, t.step_ms_p90 = (
            step.median, stats.percentile(xs, 10), stats.percentile(xs, 90))
        t.samples, t.samples_ms, t.stop_reason = len(xs), list(xs), r.stop_reason
        iv.step_ms_ci_low, iv.step_ms_ci_high = step.low, step.high
        iv.launch_us = launch.median if launch else None
        iv.launch_us_rounds, iv.host_unstable = list(r.launch_us), unstable
        if speedup is not None:
            iv.speedup, iv.speedup_ci_low, iv.speedup_ci_high = (
                speedup.median, speedup.low, speedup.high)
        j = judged(r, mode, config.target_half_width)
        iv.target_half_width, iv.judged_on = j.target, j.basis
        iv.judged_half_width = j.interval.half_width if j.interval is not None else None
        t.noisy = j.missed
        iv.rounds, iv.rounds_s, iv.round_modes = r.n, r.seconds, list(r.order[0])
        t.host_ms_per_step = stats.percentile(host, 50)
        if mode == "reduce-overhead" and compile_:
            # The graphs' own gain: compiled code with and without graph trees.
            vs = stats.ratio_interval(compile_, xs, r.process)
            # A PairedRatio has both bounds (contract/measurement.py); below 6 paired
            # rounds ratio_interval gives none, and then no PairedRatio is stored.
            if vs is not None and vs.low is not None and vs.high is not None:
                iv.vs_compile = PairedRatio(median=vs.median, low=vs.low, high=vs.high)
    return failed
