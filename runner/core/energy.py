"""Energy per step of every mode, from a counter that moves in steps (issues 28, 44).

What a window measures: the device's mean power while one mode runs free. Energy per
step is that power times the step the rounds timed (contract/energy.py on_step), so a
window needs no step count of its own.

Why windows between ticks: NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption,
mJ) is not a live integral. On the H100 and the H200 it moves every ~100 ms
(bench/results/h100-memory-energy-probe.txt). Two reads at arbitrary moments can each be
off by a whole step of the counter. So a window starts and ends at a tick: the counter's
span between two ticks over the time between them is the power, and each tick's moment is
known to within the reads around it (`Tick.half_width`; the window's `bound`).

Why a lead-in: the counter lags the load and the power ramps. Measured on the H100 (the
same file), mlp at batch 8192 starting from idle: the counter's 100 ms intervals read
314 W, then 464 W, then the steady 484-495 W; a window that opened at the first tick
after the mode started read 472 W, one that waited 0.1 s read 488 W, against 483 W for a
2 s loop. The mode runs `lead_s` before the first window may open.

Why no sync and no read in the mode's thread: the windows before issue 44 ran 2 ms
blocks, each followed by a sync and a counter read (~4 ms on the H100), until a tick
was seen. That idled the GPU most of the time around each edge, and with the counter's
lag the idle stretch fell inside the window: at mlp batch 8192 the runner read 397 W
against the loop's 483 W (-18%), where the GPU works hardest. Now the mode runs its
blocks back to back with at most `in_flight` blocks queued on the device (a fence, so
the GPU never waits and the queue never runs seconds ahead), and the ticks come from a
reader thread (runner/core/energy_counter.py ThreadTicks) whose reads release the GIL.

Consecutive windows: each mode runs once, lead-in then `windows` windows back to back
(each at least `window_s`, ending at the first tick after), sharing their edges; their
spread is the figure's power range (contract/energy.py power_range). The modes take
turns in the rotation order of the batch size's first round, so each gets the same
treatment. Why not interleave windows over modes as the rounds do: each switch costs a
lead-in (~0.15 s with its first tick), and power does not drift with the host's state
as a launch-bound step does; the step, which does, comes from the interleaved rounds.

Why apart from the rounds: the reader thread takes the GIL briefly every few ms and the
fence syncs; the integrator runs the windows after the rounds, and the idle power
before the sweep.

Torch-free: the steps, `sync`, the fence and the counter (with its clock and its tick
source) are parameters; tests drive a synthetic device on an injected clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from contract import energy as energy_fmt
from contract.energy import Energy, EnergyWindow, IdlePower
from contract.measurement import Measurement
from contract.numbers import percentile
from contract.vocab import BASELINE_MODE, TIMINGS
from runner.core import stats
from runner.core.energy_counter import (
    CounterWentBack,
    EnergyCounter,
    Tick,
    TickSource,
    ticks_of,
)
from runner.core.rounds import rotation


@dataclass(frozen=True)
class EnergyConfig:
    window_s: float = 1.0  # each window lasts at least this long, to the next tick
    windows: int = 3  # consecutive windows per mode
    lead_s: float = 0.15  # the mode runs this long before its first window may open
    idle_s: float = 1.0  # the idle window before the sweep
    idle_poll_s: float = 0.01  # sleep between reads while idle
    tick_timeout_s: float = 1.0  # a counter that does not move in this long is stuck
    in_flight: int = 2  # blocks queued on the device at most while a window runs


ENERGY_PRESETS: dict[str, EnergyConfig] = {
    # quick and standard: two windows of one ~100 ms counter step each (window_s under
    # the step, so each ends at the next tick), after a 0.1 s lead-in: about
    # 0.1 + 0.05 (the first tick) + 0.2 s = 0.35 s a mode, 1.4 s a batch size of four
    # modes; the idle window once a sweep. The default 16-point mlp sweep's energy phase
    # is then ~6 s of its ~45-60 s (issue 44: at most 15%; bench/energy_overhead.py
    # times it). Each window's edges are known to a few ms (the reader's read time, ~4 ms
    # on the H100): a bound of ~5% a window, mean zero. `thorough` takes three 1 s
    # windows after a 0.2 s lead-in (a bound under 1%), for a run that is about energy.
    "quick": EnergyConfig(window_s=0.08, windows=2, lead_s=0.1, idle_s=0.3),
    "standard": EnergyConfig(window_s=0.08, windows=2, lead_s=0.1, idle_s=0.5),
    "thorough": EnergyConfig(window_s=1.0, windows=3, lead_s=0.2, idle_s=2.0),
}
assert tuple(ENERGY_PRESETS) == TIMINGS, "contract/vocab.py TIMINGS is out of step"


@dataclass(frozen=True)
class EnergyPlan:
    """What a sweep hands each batch size: the counter opened once per sweep (or the
    reason there is none, which every point then carries), the windows' config, and the
    device's idle power read once before the first batch size."""
    counter: EnergyCounter | str
    config: EnergyConfig = EnergyConfig()
    idle: IdlePower | str | None = None


class CounterStuck(RuntimeError):
    """The counter did not move (or went backwards): no energy figure can come of it."""


class _Reader:
    """Reads of one counter, remembering the last value and when it was read."""

    def __init__(self, counter: EnergyCounter, timeout_s: float):
        self.c, self.timeout_s = counter, timeout_s
        self.poll_s = 0.0  # host time inside reads since reset
        self.last_read_s = 0.0

    def read(self) -> tuple[float, float, float]:
        """(value, when the read began, when it returned)."""
        t0 = self.c.now()
        v = self.c.read_mj()
        t1 = self.c.now()
        self.last_read_s = t1 - t0
        self.poll_s += t1 - t0
        return v, t0, t1

    def until_change(self, work: Callable[[], int]) -> tuple[float, float, float, int]:
        """Run `work` (returns steps done, synchronised) and read after each call, until
        the counter moves. Returns (value, when the detecting read began: the steps
        counted are those done by then, how late the change may have been seen: from the
        start of the read before to the end of this one, steps done)."""
        v0, t_prev, t_first = self.read()
        steps = 0
        while True:
            steps += work()
            v, t0, t1 = self.read()
            if v < v0:
                raise CounterStuck(f"the energy counter went back from {v0:.0f} to {v:.0f} mJ")
            if v != v0:
                return v, t0, t1 - t_prev, steps
            if t1 - t_first > self.timeout_s:
                raise CounterStuck(f"the energy counter did not move in {self.timeout_s:g} s")
            t_prev = t0


def idle_power(counter: EnergyCounter | str, sync: Callable[[], None],
               config: EnergyConfig = EnergyConfig()) -> IdlePower | str:
    """The device's power with nothing running: one window of at least `idle_s` between
    two changes of the counter, after a sync. Run it before the point's setup, while the
    device is as idle as it gets. A reason string where there is no figure (a reason
    given for `counter` is passed on)."""
    if isinstance(counter, str):
        return counter
    sync()
    try:
        return _idle(counter, config)
    except CounterStuck as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - the counter's own error (NVMLError)
        return f"idle window: {type(e).__name__}: {e}"[:500]


def _idle(counter: EnergyCounter, config: EnergyConfig) -> IdlePower:
    r = _Reader(counter, config.tick_timeout_s)

    def wait() -> int:
        counter.sleep(config.idle_poll_s)
        return 0

    e0, t0, edge0, _ = r.until_change(wait)
    counter.sleep(max(0.0, config.idle_s - (counter.now() - t0)))
    e1, t1, edge1, _ = r.until_change(wait)
    return IdlePower(power_w=(e1 - e0) / 1e3 / (t1 - t0), seconds=t1 - t0, mj=e1 - e0,
                     edge_s=edge0 + edge1)


def no_fence() -> Callable[[], None]:
    """A fence that waits for nothing: the host's own steps (CPU) or a synchronous fake."""
    return lambda: None


def mode_windows(step: Callable[[], object], iters: int, ticks: TickSource,
                 counter: EnergyCounter, config: EnergyConfig, *, mode: str = "",
                 sync: Callable[[], None] = lambda: None,
                 fence: Callable[[], Callable[[], None]] = no_fence) -> list[EnergyWindow]:
    """One mode running free: `lead_s` of blocks, then `config.windows` consecutive
    windows, each from a tick to the first tick at least `window_s` later.

    `iters` steps make a block; after each block `fence()` marks the device's queue and
    returns a wait for that mark; at most `config.in_flight` blocks stay queued, so the
    device always has the next block and the host never runs far ahead. `sync()` first,
    so the device runs only this mode from the lead-in on; and at the end, so the next
    mode starts on an idle queue. A window's `steps` are the steps launched while it was
    open (a diagnostic: energy per step comes from power x the timed step)."""
    sync()
    marks: deque[Callable[[], None]] = deque()
    ticks.start()
    try:
        t_start = counter.now()
        edges: list[Tick] = []
        launched: list[int] = []  # steps launched when each edge was found
        steps = 0
        while len(edges) <= config.windows:
            for _ in range(iters):
                step()
            steps += iters
            marks.append(fence())
            while len(marks) > config.in_flight:
                marks.popleft()()
            ticks.poll()
            after = t_start + config.lead_s if not edges else edges[-1].at + config.window_s
            t = ticks.first(after)
            if t is not None and (not edges or t.lo > edges[-1].hi):
                edges.append(t)
                launched.append(steps)
            elif counter.now() - max(after, t_start) > config.tick_timeout_s + config.window_s:
                raise CounterStuck(f"the energy counter did not move in "
                                   f"{config.tick_timeout_s:g} s")
    finally:
        ticks.stop()
        while marks:
            marks.popleft()()
        sync()
    return [EnergyWindow(mode=mode, round=k, mj=b.mj - a.mj,
                         steps=max(1, launched[k + 1] - launched[k]), seconds=b.at - a.at,
                         edge_s=a.half_width + b.half_width, poll_s=0.0)
            for k, (a, b) in enumerate(zip(edges, edges[1:], strict=False))]


def measure_energy(steps: dict[str, Callable[[], object]], iters: dict[str, int],
                   sync: Callable[[], None], counter: EnergyCounter | str,
                   config: EnergyConfig = EnergyConfig(), *,
                   idle: IdlePower | str | None = None,
                   fence: Callable[[], Callable[[], None]] = no_fence,
                   order: int = 0) -> dict[str, Energy]:
    """Every mode's energy at one batch size: each mode's windows (mode_windows), the
    modes in rotation `order` of their given order.

    `steps`/`iters`: the prepared modes' steps and their block sizes (the rounds' iters).
    `counter`: open_counter's answer (a reason string gives every mode that reason).
    `idle`: idle_power's answer from before the point (a reason string or None: no
    idle figures, the rest stand). Never raises for a mode: a step that raises loses
    that mode's energy (its reason says why), a stuck counter loses all of them."""
    if isinstance(counter, str):
        return {m: Energy.unavailable(counter) for m in steps}
    name = getattr(counter, "name", None)
    idle_w = idle.power_w if isinstance(idle, IdlePower) else None
    got: dict[str, list[EnergyWindow]] = {m: [] for m in steps}
    failed: dict[str, str] = {}
    ticks = ticks_of(counter)
    for mode in rotation(tuple(steps), order):
        try:
            got[mode] = mode_windows(steps[mode], iters[mode], ticks, counter, config,
                                     mode=mode, sync=sync, fence=fence)
        except (CounterStuck, CounterWentBack) as e:
            return {m: Energy.unavailable(str(e), name, tuple(got[m])) for m in steps}
        except Exception as e:  # noqa: BLE001 - this mode's energy only
            failed[mode] = f"energy window: {type(e).__name__}: {e}"[:500]
    out = {m: (Energy.unavailable(failed[m], name, tuple(got[m])) if m in failed
               else summarise(got[m], idle_w, name)) for m in steps}
    base = out.get(BASELINE_MODE)
    if base is not None and base.available:
        for m, got_m in out.items():
            if m != BASELINE_MODE and got_m.available:
                out[m] = with_gain(got_m, base)
    return out


def summarise(ws: list[EnergyWindow], idle_w: float | None, counter: str | None) -> Energy:
    """One mode's figures from its windows: the median energy per step with its interval,
    the time-weighted mean power, and the energy above idle per step."""
    if not ws:
        return Energy.unavailable("no energy window completed", counter)
    if any(w.steps <= 0 or w.mj <= 0 for w in ws):
        return Energy.unavailable("a window with no steps or no energy", counter, tuple(ws))
    xs = [w.mj_per_step for w in ws]
    # ws is not empty (above), and an interval is None only for no samples.
    iv = cast(stats.Interval, stats.clustered_interval(xs, list(range(len(xs)))))
    above = None
    if idle_w is not None:
        above = percentile([(w.mj - idle_w * w.seconds * 1e3) / w.steps for w in ws], 50)
    return Energy(energy_mj_per_step=iv.median, energy_mj_per_step_ci_low=iv.low,
                  energy_mj_per_step_ci_high=iv.high,
                  avg_power_w=sum(w.mj for w in ws) / 1e3 / sum(w.seconds for w in ws),
                  idle_power_w=idle_w, energy_above_idle_mj_per_step=above,
                  windows=tuple(ws), counter=counter)


def with_gain(e: Energy, base: Energy) -> Energy:
    """`e` with eager's energy per step over its own, paired per round of windows."""
    mine = {w.round: w.mj_per_step for w in e.windows}
    theirs = {w.round: w.mj_per_step for w in base.windows}
    shared = sorted(set(mine) & set(theirs))
    if not shared:
        return e
    iv = stats.ratio_interval([theirs[k] for k in shared], [mine[k] for k in shared],
                              list(range(len(shared))))
    if iv is None:
        return e
    return replace(e, energy_gain=iv.median, energy_gain_ci_low=iv.low,
                   energy_gain_ci_high=iv.high)


def on_timed_steps(ms: dict[str, Measurement]) -> None:
    """Every mode's energy per step from its windows' power and the step its rounds timed
    (contract/energy.py on_step says why), and each graph mode's gain from the speedup
    the point shows. Called after the windows, and again whenever a `--processes` pass
    pools more rounds into the point (the step moves; energy per step moves with it)."""
    derived: dict[str, Energy] = {}
    for mode, m in ms.items():
        e = m.energy.get()
        if e is None or not e.available:
            continue
        derived[mode] = energy_fmt.on_step(e, m.timing.step_ms, m.intervals.step_ms_ci_low,
                                           m.intervals.step_ms_ci_high)
    base = derived.get(BASELINE_MODE)
    for mode, e in derived.items():
        if base is not None and mode != BASELINE_MODE:
            iv = ms[mode].intervals
            e = energy_fmt.with_gain(e, base, iv.speedup, iv.speedup_ci_low,
                                     iv.speedup_ci_high)
        ms[mode].energy.set(e, ms[mode].energy.idle)
