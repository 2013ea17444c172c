"""One batch size: every requested mode prepared from a clean state, then timed
against each other in interleaved rounds, and everything left clean behind.

Isolation between batch sizes is a full in-process reset rather than a fresh process
per point: a process start (torch import, CUDA context) costs seconds on a slow host CPU,
which would dwarf an eager point. The reset (docs/MEASUREMENT.md, "Isolation") covers: Dynamo
caches and recompile counts (torch._dynamo.reset), CUDA graph trees and their pools,
dropped references, gc, empty_cache. tests/runner/core/test_gpu_runner.py proves it: the 12th
size of a sweep agrees with a fresh compile at that size.

Within a batch size the modes share one model and live side by side: each mode is
prepared (compile, capture), checked against eager and warmed up in turn, with its own
memory snapshots around that, so no mode's pool is counted as another's. Only then are
they timed, in rounds (runner/core/rounds.py): the host's drift hits every mode alike and the
speedup is a paired per-round ratio with a 95% interval (runner/core/stats.py). The energy
windows (runner/core/energy.py), then per mode the per-call latency and the profiled pass, run
after the rounds, outside them: reading the energy counter takes milliseconds of host time
and the profiler distorts steps, so neither may touch the figures the rounds pair.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import logging
import sys
import traceback
from collections.abc import Callable
from typing import Any, cast

from contract import host_split
from contract.measurement import Clocks, CompileCounters, HostPlacement, Measurement, NoIdle
from contract.vocab import BASELINE_MODE, COMPILED_MODES, CUDA_GRAPH_MODES
from runner.core import cuda_fatal, energy, host_gate, memory, modes, profiling, stats
from runner.core import rounds as rounds_mod
from runner.core.compile_watch import compile_watch, cudagraph_status, no_recompiles
from runner.core.memory import clear_cublas_workspaces
from runner.core.modes import compare
from runner.core.placement import placement
from runner.core.rounds import store_rounds
from runner.core.timing import Clock, TimingConfig, gc_paused, latency, phase, warm_up
from runner.core.workloads import Workload


def measure_batch(workload: Workload, mode_names: tuple[str, ...], batch_size: int,
                  device: str, config: TimingConfig, *,
                  extra_rounds=None, on_phase=None,
                  kept: dict | None = None,
                  energy_plan: energy.EnergyPlan | None = None,
                  before_timing: Callable[[], None] | None = None) -> list[Measurement]:
    """Measure every mode at one batch size; never raises for a failing mode or batch
    size (status "error" or "unsupported" instead), and resets state before returning.

    `extra_rounds(prepared_modes) -> list[Rounds]` may add rounds timed elsewhere (fresh
    processes, `--processes`); they are pooled with this process's before the intervals
    are computed. `on_phase(mode, phase)` hears each phase start (vocab.POINT_PHASES;
    mode None for the shared rounds), so progress can name the mode in flight rather
    than sit on the batch size for the minutes a cold compile takes. `kept`: receives
    this process's own Rounds under "rounds" (None when no mode got to its rounds), for
    pool_rounds to add later passes to. `energy_plan`: the sweep's counter and idle
    power; the modes timed get energy windows after the rounds (None: no energy fields
    at all, as a repeat or rescue process). `before_timing()`: called after every mode's
    setup, before the rounds (the sweep waits there for its compile helpers,
    runner/core/compile_ahead.py)."""
    ms = {mode: Measurement(mode, batch_size) for mode in mode_names}
    shared: dict[str, float] = {}
    for m in ms.values():
        m.timing.phase_s = {}
    batch = _Batch(workload, batch_size, device, config, ms, shared)
    batch.on_phase = on_phase
    batch.energy_plan = energy_plan
    batch.before_timing = before_timing
    try:
        r = batch.run(extra_rounds)
        if kept is not None and r is not None:
            kept["rounds"] = copy.deepcopy(r)
    except Exception as e:  # build or reference failed (OOM...): every mode errors
        batch.lost = _lost_by(e)
        for m in ms.values():  # (after _ContextLost, the modes left never ran: below)
            if m.status == "ok" and m.timing.step_ms is None and not isinstance(
                    e, _ContextLost):
                _fail(m, e)
    finally:
        batch.prepared.clear()
        with phase(shared, "cleanup"):
            batch.lost = _cleanup(device, batch.lost or _lost_in(ms))
        _mark_lost(ms, batch.lost, batch_size)
        # Where it ran (GPUs, CPUs) and, under a host policy, what its timing met.
        host = {**(host_gate.summary(batch.sections) or {"policy": None}), **placement()}
        for m in ms.values():
            # host_gate.summary's and placement()'s keys: HostPlacement's (contract).
            m.host.placement = cast(HostPlacement, dict(host))
            phases = _phases(m)
            for k, v in shared.items():
                phases[k] = v / len(ms)
    return list(ms.values())


def _phases(m: Measurement) -> dict[str, float]:
    """m.timing.phase_s, which measure_batch and time_batch_rounds set to {} before any
    phase: never None here."""
    return cast("dict[str, float]", m.timing.phase_s)


def time_batch_rounds(workload: Workload, mode_names: tuple[str, ...], batch_size: int,
                      device: str, config: TimingConfig) -> rounds_mod.Rounds:
    """Only the rounds of one batch size (prepared and warmed up as measure_batch does):
    what a `--processes` repeat in a fresh process contributes."""
    ms = {mode: Measurement(mode, batch_size) for mode in mode_names}
    for m in ms.values():
        m.timing.phase_s = {}
    batch = _Batch(workload, batch_size, device, config, ms, {})
    try:
        r = batch.run(None, rounds_only=True)
    finally:
        batch.prepared.clear()
        reset_state(device)
    if r is None:
        r = rounds_mod.Rounds()
    for mode, m in ms.items():  # a mode that failed to prepare here pairs with nothing
        if m.status != "ok":
            r.failed.setdefault(mode, m.message or m.status)
    return r


REPEAT_PREFIX = "RepeatError: repeat process"  # a point failed by a --processes child


def _from_repeat(e: BaseException) -> bool:
    return isinstance(e, rounds_mod.RepeatError)


class _ContextLost(Exception):
    """A sticky CUDA error ended this batch size: nothing more can run in this process."""


def _lost_by(e: BaseException) -> str | None:
    """The message of a sticky CUDA error (a repeat process's is its own context's)."""
    if isinstance(e, _ContextLost):
        return str(e)
    return _one_line(e) if cuda_fatal.is_sticky(e) and not _from_repeat(e) else None


def _lost_in(ms: dict[str, Measurement]) -> str | None:
    """A sticky error a mode met and kept as its message (the rounds, the profile)."""
    return next((m.message for m in ms.values() if m.status == "error"
                 and cuda_fatal.is_sticky_text(m.message)
                 and not m.message.startswith(REPEAT_PREFIX)), None)


def _mark_lost(ms: dict[str, Measurement], lost: str | None, batch_size: int) -> None:
    if not lost:
        return
    cuda_fatal.mark_lost(lost)
    for m in ms.values():
        if m.status == "ok" and m.timing.step_ms is None:
            m.status, m.message = "skipped", cuda_fatal.lost_message(batch_size)
        m.host.cuda_context_lost = lost


def _cleanup(device: str, lost: str | None) -> str | None:
    """reset_state, unless the context is gone (every CUDA call would raise again); a
    sticky error that only surfaces here (an asynchronous assert met by the sync) is
    returned as lost, not raised, so the points measured before it are kept."""
    if lost:
        return lost
    try:
        reset_state(device)
    except Exception as e:
        if not cuda_fatal.is_sticky(e):
            raise
        return _one_line(e)
    return None


def _fail(m: Measurement, e: BaseException) -> None:
    if isinstance(e, modes.Unsupported):
        m.status, m.message = "unsupported", str(e)
        return
    m.status, m.message = "error", _one_line(e)
    m.host.traceback = "".join(
        traceback.format_exception(type(e), e, e.__traceback__, limit=-6))[-4000:]


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:500]


def build_point(workload: Workload, batch_size: int, device: str) -> tuple[Any, Any, Any]:
    """The model and a point's two inputs (timed, checked), as every process that builds
    this point does (the sweep's, a repeat child, a compile helper): the same seed gives
    the same weights at every point, the batch size's generator the same inputs."""
    import torch

    torch.manual_seed(0)
    model, make_input = workload.build(device)
    if hasattr(model, "prepare_batch"):
        model.prepare_batch(batch_size)
    gen = torch.Generator().manual_seed(batch_size)
    return model, make_input(batch_size, gen), make_input(batch_size, gen)


def grad_mode(model):
    """The grad mode a point runs in: none, but for a training step."""
    import torch

    return torch.set_grad_enabled(bool(getattr(model, "needs_grad", False)))


class _Batch:
    """The state of one batch size's measurement, so each phase is one short method."""
    lost: str | None = None  # a sticky CUDA error's message: this process's context is gone

    def __init__(self, workload, batch_size, device, config, ms, shared):
        self.workload, self.batch_size, self.device, self.config = (
            workload, batch_size, device, config)
        self.ms, self.shared = ms, shared
        self.cuda = device.startswith("cuda")
        self.prepared: dict[str, modes.Prepared] = {}
        self.iters: dict[str, int] = {}
        self.watch: dict[str, CompileCounters] = {}
        self.sections: list[host_gate.Section] = []  # this batch's gated timing sections
        self.on_phase = None  # measure_batch's progress hook
        self.energy_plan: energy.EnergyPlan | None = None
        self.before_timing: Callable[[], None] | None = None

    def phase_starts(self, mode: str | None, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(mode, name)

    def run(self, extra_rounds, rounds_only: bool = False) -> rounds_mod.Rounds | None:
        with phase(self.shared, "build"):
            self.build()
        # All under one grad mode (no_grad, but for a training step): grad mode is a
        # guard, so warm-up and timing must share it.
        with grad_mode(self.model):
            with phase(self.shared, "reference"):
                self.reference = modes.reference(self.model, _fresh(self.x_check))
            clocks = _clocks(self.device) if self.cuda else None
            for mode, m in self.ms.items():
                # A CPU point reads no clocks: null, the key kept as bundles hold it.
                m.host.clocks_before = clocks
                if clocks is None:
                    m.extra["clocks_before"] = None
                try:
                    self.phase_starts(mode, "setup")
                    self.prepare(mode, m)
                except Exception as e:  # this mode only; the others still run
                    _fail(m, e)
                    self.prepared.pop(mode, None)
                    if cuda_fatal.is_sticky(e):  # ...unless the context went with it
                        raise _ContextLost(m.message) from e
            if not self.prepared:
                return None
            if self.before_timing is not None:
                self.phase_starts(None, "ahead")
                self.before_timing()
            with no_recompiles(any(m in COMPILED_MODES for m in self.prepared)):
                self.phase_starts(None, "timing")
                r = self.time_rounds()
                if rounds_only:
                    return r
                if extra_rounds is not None:
                    for other in extra_rounds(tuple(self.prepared)):
                        r.extend(other)
                for mode in store_rounds(self.ms, list(self.prepared), r, self.config):
                    self.prepared.pop(mode)
                if self.energy_plan is not None and self.prepared:
                    self.measure_energy(self.energy_plan)
                for mode in list(self.prepared):
                    self.phase_starts(mode, "profiling")
                    self.after_rounds(mode, self.ms[mode])
                host_split.fill(self.ms)  # GPU busy came with the profile: now the split
            if self.cuda:
                self.phase_starts(None, "memory")
                self.memory_pass()
        return r

    def build(self) -> None:
        import torch

        model, self.x, self.x_check = build_point(self.workload, self.batch_size, self.device)
        self.model = model
        # Convolutions in float32 run on TF32 tensor cores unless the user turned cuDNN's
        # TF32 off: the correctness check then allows TF32 rounding (limits.TF32_TOLERANCE).
        self.tf32_conv = bool(self.cuda and torch.backends.cudnn.allow_tf32
                              and isinstance(model, torch.nn.Module)
                              and any(isinstance(x, torch.nn.modules.conv._ConvNd)
                                      for x in model.modules()))
        for m in self.ms.values():
            m.timing.num_threads = torch.get_num_threads()
            m.setup.tf32_matmul = bool(torch.backends.cuda.matmul.allow_tf32)
            m.setup.tf32_conv = self.tf32_conv

    def prepare(self, mode: str, m: Measurement) -> None:
        """Setup, correctness, warm-up and memory of one mode, before any round."""
        phases, setup = _phases(m), m.setup
        if mode in CUDA_GRAPH_MODES and not self.cuda:
            raise modes.Unsupported(f"{mode} needs CUDA graphs, which exist on CUDA "
                                    f"devices only; this point runs on {self.device}")
        with compile_watch(mode in COMPILED_MODES) as watch:
            self.watch[mode] = watch
            with phase(phases, "setup"):
                prepared = modes.prepare(mode, self.model, self.x, self.device)
            setup.setup_s, setup.setup_calls_s = prepared.setup_s, prepared.setup_calls_s
            m.set_details(prepared.details)
            with no_recompiles(mode in COMPILED_MODES):
                with phase(phases, "correctness"):
                    out = prepared.run(_fresh(self.x_check))
                    own = getattr(self.model, "compare", None)
                    err, tol, rel = own(out, self.reference) if own else \
                        compare(out, self.reference, tf32=self.tf32_conv)
                    setup.max_abs_err, setup.correct = err, rel <= tol
                    setup.rel_err, setup.tolerance = rel, tol
                    del out
                clock = Clock(self.device)
                with gc_paused():
                    w = warm_up(prepared.step, clock, self.config)
        if mode in COMPILED_MODES:
            setup.compile = watch
        phases["warmup"] = w.seconds
        m.timing.warmup_steps, m.timing.iters_per_block = w.steps, w.iters_per_block
        self.iters[mode] = w.iters_per_block
        self.prepared[mode] = prepared
        if self.cuda:
            # (What the mode keeps is measured after the rounds, alone: memory_pass.)
            if prepared.separate_graphs is not None:
                try:
                    m.memory.separate_graphs = prepared.separate_graphs()
                except Exception as e:  # noqa: BLE001 - an extra figure, not the point's
                    setup.after_error = _one_line(e)

    def time_rounds(self) -> rounds_mod.Rounds:
        clock = Clock(self.device)
        probe = clock.launch_probe(self.config.probe_launches)
        steps = {mode: p.step for mode, p in self.prepared.items()}
        with self.gated(), gc_paused():
            r = rounds_mod.run_rounds(steps, self.iters, clock, self.config, probe=probe)
        self.shared["rounds"] = r.seconds
        return r

    def measure_energy(self, plan: energy.EnergyPlan) -> None:
        """Every timed mode's energy windows (runner/core/energy.py), under the same gate
        as the rounds and without gc; never raises (each mode's reason says what failed)."""
        if isinstance(plan.counter, str):  # no counter: the reason, and no phase to time
            for mode in self.prepared:
                self.ms[mode].energy.set(energy.Energy.unavailable(plan.counter))
            return
        self.phase_starts(None, "energy")
        steps = {mode: p.step for mode, p in self.prepared.items()}
        clock = Clock(self.device)
        with phase(self.shared, "energy"), self.gated(), gc_paused():
            # Blocks as the rounds' (~min_block_ms each): the fence keeps two queued.
            got = energy.measure_energy(steps, dict(self.iters), clock.sync, plan.counter,
                                        plan.config, idle=plan.idle, fence=clock.fence)
        idle = NoIdle(plan.idle) if isinstance(plan.idle, str) else plan.idle
        for mode, e in got.items():
            self.ms[mode].energy.set(e, idle)
        energy.on_timed_steps({mode: self.ms[mode] for mode in got})

    def memory_pass(self) -> None:
        """What each timed mode keeps, each set up again alone from a clean state
        (runner/core/memory.py says why), eager first: it is every other mode's baseline,
        measured even when the sweep did not ask for it. Never raises: a mode whose pass
        fails keeps no memory figures and says why."""
        timed = [mode for mode, m in self.ms.items()
                 if m.status == "ok" and m.timing.step_ms is not None]
        if not timed:
            return
        self.prepared.clear()  # the timed modes' graphs and pools go now
        reset_state(self.device)
        base: memory.MemState | None = None
        eager: int | None = None
        for mode in [BASELINE_MODE, *(m for m in timed if m != BASELINE_MODE)]:
            m = self.ms.get(mode)
            with phase(m.timing.phase_s if m is not None else self.shared, "memory"):
                try:
                    k = self.kept(mode)
                except Exception as e:  # noqa: BLE001 - this mode's memory only
                    reset_state(self.device)
                    if m is not None:
                        m.memory.memory_error = _one_line(e)
                    if cuda_fatal.is_sticky(e):
                        raise _ContextLost(_one_line(e)) from e
                    continue
            base = base or k.m0
            if mode == BASELINE_MODE:
                eager = k.reserved
            if m is not None:
                separate = m.memory.separate_graphs
                m.memory = memory.figures(k, base, eager)
                m.memory.separate_graphs = separate

    def kept(self, mode: str) -> memory.Kept:
        """One mode alone: clean state, setup, steps, cached blocks released; then torn
        down to the clean state again."""
        m0 = memory.clean(self.device)
        with compile_watch(mode in COMPILED_MODES) as watch:
            prepared = modes.prepare(mode, self.model, self.x, self.device)
            for _ in range(MEMORY_STEPS):  # a pool can still grow on its first replays
                prepared.step()
            memory.reset_peak(self.device)
            for _ in range(MEMORY_STEPS):
                prepared.step()
            peak = memory.peak_allocated(self.device)
        m1 = memory.released(self.device)
        del prepared
        reset_state(self.device)
        return memory.Kept(m0, m1, peak, compile_cold=bool(watch.fxgraph_cache_miss))

    @contextlib.contextmanager
    def gated(self):
        """A timing section under the host's policy (runner/core/host_gate.py): only the
        rounds and the latency calls, so compile, capture, warm-up and the profiled pass
        of workers on one host still overlap."""
        with host_gate.current().timing() as section:
            if section is not None:
                self.sections.append(section)
            yield

    def after_rounds(self, mode: str, m: Measurement) -> None:
        """Per-call latency and, on CUDA, the profiled pass: outside the rounds, since
        syncs and the profiler would distort the figures the rounds pair."""
        phases, timing = _phases(m), m.timing
        prepared = self.prepared[mode]
        try:
            with phase(phases, "latency"), self.gated():
                lat = latency(prepared.step, Clock(self.device), self.config.latency_calls)
            timing.latency_ms = stats.percentile(lat, 50)
            timing.latency_ms_p10 = stats.percentile(lat, 10)
            timing.latency_ms_p90 = stats.percentile(lat, 90)
            if self.cuda:
                with phase(phases, "profile", on_error=True):
                    m.launches, m.trace = profiling.profile_step(
                        prepared.step, self.config.profile_steps, trace=True)
                m.host.clocks_after = _clocks(self.device)
        except Exception as e:  # noqa: BLE001 - this mode's point only
            _fail(m, e)
            return
        status, reason = cudagraph_status(mode, m.launches.graph_launches_per_step,
                                          self.watch.get(mode, CompileCounters()))
        m.setup.cudagraph_status = status
        if reason:
            m.setup.cudagraph_reason = reason
            if status in ("skipped", "partial", "eager-fallback"):
                m.message = reason[:500]


MEMORY_STEPS = 3  # steps before and during the memory pass's peak


def reset_state(device: str) -> None:
    """Back to as-if-fresh: no compiled code, no graph trees, no pools, no cached blocks."""
    import torch

    # Only what was loaded can hold state; importing Dynamo just to reset it would
    # charge seconds of import to an eager-only sweep.
    if "torch._dynamo" in sys.modules:
        try:
            torch._dynamo.reset()
        except Exception:  # a reset that fails leaves state behind; the next M0 shows it
            logging.getLogger(__name__).warning("torch._dynamo.reset failed", exc_info=True)
    if device.startswith("cuda") and "torch._inductor.cudagraph_trees" in sys.modules:
        try:  # torch < 2.5's dynamo reset does not clear the graph trees itself
            from torch._inductor.cudagraph_trees import reset_cudagraph_trees

            reset_cudagraph_trees()
        except Exception:
            pass
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        clear_cublas_workspaces()
        torch.cuda.empty_cache()


def _fresh(x):
    # Inputs are cloned for each use: a model that mutates its input must not change
    # the reference's input or the next call's.
    return x.clone() if hasattr(x, "clone") else x


def _clocks(device: str) -> Clocks:
    from runner.core.environment import read_clocks

    return read_clocks(device)
