"""Energy per step of every mode, from a counter that moves in steps (issue 28).

Why windows between ticks: NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption,
mJ) is not a live integral. On the lent H200 it moved about every 100 ms (78-103 ms idle;
bench/results/h200-energy-probe.txt; docs/MEASUREMENT.md, "Energy"): 3 distinct values in 42
reads over 0.2 s. Two reads at arbitrary times can be off by one whole step of the counter
at each end, ~10% of a one-second window. So a window here starts and ends where the
counter has just moved: it polls until the value changes, counts steps from that read,
runs at least `window_s` (1 s) without reading, then polls again until the next change.
The counter's span between the two changes and the steps counted between the two
detecting reads then differ only by how late each change was seen (one poll interval:
one block of steps plus a read), and they differ alike at both ends, so the error has
mean zero and a bound stated per window (EnergyWindow.bound; ~2% for 10 ms blocks in a
1 s window). The mode keeps running across both edges (it runs while the start is awaited
and until the end is seen), so a counter that reports with a lag shifts the window
within one mode's work instead of mixing in another's. A window begins one counter step after the
last one ended, so waiting for one change (settle_ticks=1) covers a lag of up to one step;
settle_ticks=2 covers up to two (tests/runner/core/test_energy_windows.py shows both, and
the failure past).

Why steps are counted after a sync: CUDA work is asynchronous; a step issued is not a
step done. Each poll runs one block (the rounds' iters for the mode) and then `sync`, so
the count at a read is of steps finished by then, as the counter sees them.

Why interleaved like the rounds (runner/core/rounds.py): the host drifts and flips
between states (docs/MEASUREMENT.md, "The host is part of the measurement"), and a launch-bound
mode's energy per step follows its step time. Windows go round-robin over the modes,
rotated each round, so a host state hits every mode of a round alike, and the gain over
eager is a paired per-round ratio. Each window is long and few are taken, so each is
treated like one of the rounds' processes: the interval is stats.clustered_interval with
one cluster per window (the order-statistic interval where there are enough windows,
widened by a t interval over the windows).

Why apart from the rounds: reads of the counter take milliseconds of host time (~4 ms
each on the H200) and would cost the rounds their figures; the integrator runs the
windows after the rounds, and the idle power before the point.

Torch-free: the steps, `sync` and the counter (with its clock) are parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from contract import energy as energy_fmt
from contract.energy import Energy, EnergyWindow, IdlePower
from contract.measurement import Measurement
from contract.numbers import percentile
from contract.vocab import BASELINE_MODE, TIMINGS
from runner.core import stats
from runner.core.energy_counter import EnergyCounter
from runner.core.rounds import rotation


@dataclass(frozen=True)
class EnergyConfig:
    window_s: float = 1.0  # each window lasts at least this long (10+ counter steps)
    windows: int = 3  # windows per mode, in interleaved rounds
    idle_s: float = 1.0  # the idle window before the point
    settle_ticks: int = 1  # changes seen with the mode running before a window starts
    idle_poll_s: float = 0.01  # sleep between reads while idle
    tick_timeout_s: float = 1.0  # a counter that does not move in this long is stuck


ENERGY_PRESETS: dict[str, EnergyConfig] = {
    # Smoke runs: windows shorter than the second (3-4 counter steps); the bound
    # each window states says what that costs.
    "quick": EnergyConfig(window_s=0.3, windows=2, idle_s=0.3),
    # The sweep default, sized to issue 28's budget (a sweep grows by at most 15%):
    # the shipped H200 `mlp` sweep (standard, --processes 3) takes ~17 s per batch size,
    # so the windows get ~2.5 s of it. A window costs window_s plus on average half a
    # counter step (~0.045 s) to find its start and half a step to find its end: 4 modes
    # x 2 windows x (0.2 + 0.09) s = 2.3 s, plus the idle window once per sweep (1 s +
    # ~0.1 s over 7 sizes: 0.16 s) = 2.5 s, +14.7%. Two windows, not one, so each
    # figure keeps an interval (wide: two clusters). The price is quantisation error: a
    # window's two edges are each seen at most one energy block (ENERGY_BLOCK_MS) and
    # two counter reads (~4 ms each on the H200) late, ~20 ms over a ~0.25 s window:
    # at most ~8% per window (EnergyWindow.bound, stored), mean zero. `thorough` keeps the
    # issue's 1 s windows (bound ~2%), for a run that is about energy.
    "standard": EnergyConfig(window_s=0.2, windows=2, idle_s=1.0),
    # Six windows: enough for the order-statistic 95% interval on its own.
    "thorough": EnergyConfig(windows=6, idle_s=2.0),
}
assert tuple(ENERGY_PRESETS) == TIMINGS, "contract/vocab.py TIMINGS is out of step"


# An energy window runs each mode in blocks of about this many ms, shorter than the
# rounds' (10 ms at standard): a window's edges are seen up to one block late, so the
# block bounds the error; the sync between blocks idles the GPU for some tens of us, a
# bias of ~1% at 2 ms, below that bound.
ENERGY_BLOCK_MS = 2.0


def energy_iters(iters: int, min_block_ms: float) -> int:
    """Steps per energy block, from the rounds' block (`iters` steps of at least
    `min_block_ms`): about ENERGY_BLOCK_MS of work, at least one step."""
    if min_block_ms <= ENERGY_BLOCK_MS:
        return max(1, iters)
    return max(1, round(iters * ENERGY_BLOCK_MS / min_block_ms))


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


def window(step: Callable[[], object], iters: int, sync: Callable[[], None],
           counter: EnergyCounter, config: EnergyConfig, mode: str = "",
           round_: int = 0) -> EnergyWindow:
    """One window of one mode: from a change of the counter, at least window_s of steps,
    to the next change; the mode runs across both edges."""
    r = _Reader(counter, config.tick_timeout_s)

    def block() -> int:
        for _ in range(iters):
            step()
        sync()
        return iters

    for _ in range(max(1, config.settle_ticks)):
        e0, t0, edge0, _ = r.until_change(block)
    r.poll_s = r.last_read_s  # the detecting read is the window's first moment
    steps = 0
    while counter.now() - t0 < config.window_s:  # no reads: they would idle the device
        steps += block()
    e1, t1, edge1, tail = r.until_change(block)
    return EnergyWindow(mode=mode, round=round_, mj=e1 - e0, steps=steps + tail,
                        seconds=t1 - t0, edge_s=edge0 + edge1, poll_s=r.poll_s)


def measure_energy(steps: dict[str, Callable[[], object]], iters: dict[str, int],
                   sync: Callable[[], None], counter: EnergyCounter | str,
                   config: EnergyConfig = EnergyConfig(), *,
                   idle: IdlePower | str | None = None) -> dict[str, Energy]:
    """Every mode's energy at one batch size, from `config.windows` rounds of windows.

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
    for k in range(config.windows):
        for mode in rotation(tuple(m for m in steps if m not in failed), k):
            try:
                got[mode].append(window(steps[mode], iters[mode], sync, counter, config,
                                        mode, k))
            except CounterStuck as e:
                return {m: Energy.unavailable(str(e), name, tuple(got[m])) for m in steps}
            except Exception as e:  # noqa: BLE001 - this mode's energy only
                failed[mode] = f"energy window: {type(e).__name__}: {e}"[:500]
    out = {m: (Energy.unavailable(failed[m], name, tuple(got[m])) if m in failed
               else summarise(got[m], idle_w, name)) for m in steps}
    base = out.get(BASELINE_MODE)
    if base is not None and base.available:
        for m, e in out.items():
            if m != BASELINE_MODE and e.available:
                out[m] = with_gain(e, base)
    return out


def summarise(ws: list[EnergyWindow], idle_w: float | None, counter: str | None) -> Energy:
    """One mode's figures from its windows: the median energy per step with its interval,
    the time-weighted mean power, and the energy above idle per step."""
    if not ws:
        return Energy.unavailable("no energy window completed", counter)
    if any(w.steps <= 0 or w.mj <= 0 for w in ws):
        return Energy.unavailable("a window with no steps or no energy", counter, tuple(ws))
    xs = [w.mj_per_step for w in ws]
    iv = stats.clustered_interval(xs, list(range(len(xs))))
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
