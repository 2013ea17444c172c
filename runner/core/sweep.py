"""A sweep: one workload over batch sizes x modes, each point handed to a sink as it ends.

Batch sizes run one after another, each isolated from the last (runner/core/point.py); the
modes of one batch size are prepared together and timed in interleaved rounds, so their
speedups compare like with like.

The sweep is declared as data (SweepSpec, frozen) and run by one function; where results
go (database, bundle file, a list in a test) is the sink's business. A point that fails
is stored as "error" and the sweep goes on; Ctrl-C or should_stop() ends it "cancelled"
with the finished points kept.
"""

from __future__ import annotations

import copy
import gc
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from contract.bundle import now_iso
from contract.measurement import Measurement
from contract.run_record import Environment, Run
from contract.specs import SpecError, SweepSpec, check_sweep
from runner.core import cuda_fatal, rescue
from runner.core.device import pick_device
from runner.core.energy import ENERGY_PRESETS, EnergyPlan, idle_power
from runner.core.timing import TIMING_PRESETS, Clock, for_processes, phase
from runner.core.workloads import Workload, resolve

__all__ = ["SpecError", "SweepSpec", "prepare", "run_sweep", "validate_spec"]

class Sink(Protocol):
    def start(self, environment: Environment, run: Run) -> None: ...
    def point(self, measurement: Measurement) -> None: ...
    def update(self, measurement: Measurement) -> None: ...  # the same point, more rounds
    def finish(self, status: str) -> None: ...


def validate_spec(spec: SweepSpec, allow_import: bool = True) -> Workload:
    """The contract's one check (contract/specs.py), then what needs this machine
    (prepare). Raise SpecError / WorkloadError (one line naming the bad value); return the
    resolved workload."""
    return prepare(check_sweep(spec, allow_import=allow_import), allow_import)


def prepare(spec: SweepSpec, allow_import: bool = True) -> Workload:
    """What a checked spec needs of this machine: the workload resolved (a user factory
    imported), the device present (runner/core/device.py) and the compile helpers' setting
    readable (runner/core/compile_ahead.py)."""
    from runner.core import compile_ahead

    compile_ahead.asked()
    workload = resolve(spec.workload, dict(spec.params or {}), allow_import=allow_import)
    pick_device(spec.device)
    return workload


def points(spec: SweepSpec) -> list[tuple[str, int]]:
    """Batch-major order: a partial sweep still compares every mode at the sizes done."""
    return [(mode, b) for b in spec.batch_sizes for mode in spec.modes]


NO_CUDA = "no CUDA device"
ENERGY_OFF = "energy not measured: turned off (--no-energy)"


def energy_plan(spec: SweepSpec, counter=None) -> EnergyPlan:
    """The sweep's energy counter, opened once (runner/core/energy_counter.py), or the
    reason every point carries instead of a figure: a CPU sweep, --no-energy, no NVML.
    `counter`: a counter to use instead of NVML's (tests, bench/)."""
    config = ENERGY_PRESETS[spec.timing]
    if not spec.energy:
        return EnergyPlan(ENERGY_OFF, config)
    if counter is None:
        if not spec.device.startswith("cuda"):
            return EnergyPlan(f"{NO_CUDA}: this sweep runs on {spec.device}", config)
        from runner.core.energy_counter import open_counter

        counter = open_counter(spec.device)
    return EnergyPlan(counter, config)


@dataclass
class _Sweep:
    """A sweep in flight (run_sweep's state): what it measures, where it reports, how far
    it got, and each batch size's own rounds for the --processes passes."""
    spec: SweepSpec
    workload: Workload
    sink: Sink
    config: Any
    plan: Any
    progress: Callable | None
    should_stop: Callable[[], bool] | None
    total: int
    done: int = 0
    last: Measurement | None = None
    own: dict[int, tuple] = field(default_factory=dict)  # batch -> (Rounds, its points)
    ahead: Any = None  # compile_ahead.Ahead: the helpers compiling later batch sizes

    @property
    def doing(self) -> str:
        modes = self.spec.modes
        return modes[0] if len(modes) == 1 else f"{len(modes)} modes"

    def tell(self, current: tuple | None, done: int | None = None) -> None:
        if self.progress is not None:
            self.progress(self.done if done is None else done, self.total, current,
                          self.last)


def run_sweep(spec: SweepSpec, sink: Sink, *, progress: Callable | None = None,
              should_stop: Callable[[], bool] | None = None,
              command: str | None = None, workload: Workload | None = None,
              energy_counter=None) -> str:
    """Run the sweep; return the final run status (done | cancelled). `workload`: what
    validate_spec (or prepare) returned where the spec entered, so it is not checked
    again; without it the spec is checked here. `energy_counter`: one to read instead of
    NVML's (tests; a CPU sweep then gets energy figures too)."""
    from runner.core import compile_ahead, environment, repeat
    from runner.core.point import reset_state

    workload = workload or validate_spec(spec)
    config = for_processes(TIMING_PRESETS[spec.timing], spec.processes)
    env = environment.capture(spec.device)
    run = Run(uuid=str(uuid.uuid4()), workload=workload.name,
              workload_params=dict(workload.params), dtype=workload.dtype,
              created_at=now_iso(), label=spec.label, command=command)
    sink.start(env, run)
    sweep = _Sweep(spec, workload, sink, config, energy_plan(spec, energy_counter),
                   progress, should_stop, total=len(points(spec)))
    status = "done"
    # The repeat processes start now, so their imports overlap this pass; each waits
    # for its turn (runner/core/repeat.py, Children).
    children = repeat.Children(spec) if spec.processes > 1 else None
    try:
        # Helpers compile the later batch sizes while this process sets up the first;
        # its rounds wait for them (runner/core/compile_ahead.py). Started now, so their
        # imports overlap the idle power; released after it: their GPU work would count
        # in it.
        if compile_ahead.wanted(spec):
            sweep.ahead = compile_ahead.Ahead(spec)
        reset_state(spec.device)  # whatever ran in this process before is not charged
        _idle_power(sweep)
        if sweep.ahead is not None:
            sweep.ahead.go()
        gc.freeze()
        status = _batches(sweep)
        if status == "done" and children is not None:
            status = _repeat_passes(spec, sink, sweep.own, config, progress, should_stop,
                                    children)
    except KeyboardInterrupt:
        status = "cancelled"
    except BaseException:
        sink.finish("failed")
        raise
    finally:
        if sweep.ahead is not None:
            sweep.ahead.close()
        if children is not None:
            children.close()  # any not used (a cancelled or failed sweep): ended now
        gc.unfreeze()  # hand the objects back to the collector for whatever runs next
        close = getattr(sweep.plan.counter, "close", None)
        if close is not None:
            close()
    sweep.tell(None, sweep.total if status == "done" else None)
    sink.finish(status)
    return status


def _idle_power(sweep: _Sweep) -> None:
    """Idle power once per sweep, not per point (issue 28's budget: +15% at most;
    runner/core/energy.py ENERGY_PRESETS), after the reset, before any work."""
    if isinstance(sweep.plan.counter, str):
        return
    sweep.tell((sweep.doing, sweep.spec.batch_sizes[0], "energy"))
    sweep.plan = replace(sweep.plan, idle=idle_power(
        sweep.plan.counter, Clock(sweep.spec.device).sync, sweep.plan.config))


def _batches(sweep: _Sweep) -> str:
    """Every batch size in turn, each point stored as soon as it ends; the status."""
    spec = sweep.spec
    for batch in spec.batch_sizes:
        if sweep.should_stop is not None and sweep.should_stop():
            return "cancelled"
        sweep.tell((sweep.doing, batch))
        measured = _one_batch(sweep, batch)
        if cuda_fatal.lost_in(measured):  # no more GPU work here: the rest elsewhere
            status, sweep.done = rescue.rest_of_sweep(spec, batch, sweep.sink, sweep.progress,
                                                      sweep.should_stop, sweep.done,
                                                      sweep.total)
            return status
        # What survives a point's cleanup (torch, Dynamo and Inductor modules, the sink)
        # lives on: freeze it so each later gc.collect (cleanup, and before timing) scans
        # only new objects. Seen on the H200: ~0.3 s of collection per point otherwise,
        # most of the harness overhead outside setup and timing.
        gc.freeze()
    return "done"


def _one_batch(sweep: _Sweep, batch: int) -> list[Measurement]:
    """Measure one batch size's modes and hand each point to the sink."""
    from runner.core.point import measure_batch

    spent: dict[str, float] = {}

    # Bound now: done and last do not move while the batch size is measured.
    def on_phase(mode: str | None, name: str, done: int = sweep.done,
                 last: Measurement | None = sweep.last) -> None:
        if sweep.progress is not None:
            sweep.progress(done, sweep.total, (mode or sweep.doing, batch, name), last)

    kept: dict = {}
    ahead = sweep.ahead.wait if sweep.ahead is not None and sweep.ahead.running else None
    with phase(spent, "point"):
        measured = measure_batch(sweep.workload, sweep.spec.modes, batch, sweep.spec.device,
                                 sweep.config, on_phase=on_phase, kept=kept,
                                 energy_plan=sweep.plan, before_timing=ahead)
    if kept.get("rounds") is not None:
        sweep.own[batch] = (kept["rounds"], measured)
    wall = spent["point"]
    for m in measured:
        sweep.last = m
        m.timing.point_wall_s = wall / len(measured)
        sweep.sink.point(m)
        sweep.done += 1
        if m.status == "error" and sweep.done < sweep.total:
            sweep.tell((sweep.doing, batch))
    return measured


def _repeat_passes(spec: SweepSpec, sink: Sink, own: dict[int, tuple], config,
                   progress, should_stop, children) -> str:
    """With --processes K: K - 1 passes over every batch size in fresh processes, after
    this process's own (runner/core/repeat.py says why whole passes). Each point was
    stored from the first pass; as a pass brings a batch size's rounds, they are pooled
    with those so far and the batch size's points are replaced (sink.update), so a kill
    loses at most the pass in flight. Returns the run status (cancelled: stopped early)."""
    from contract import host_split
    from runner.core import repeat
    from runner.core.energy import on_timed_steps
    from runner.core.point import store_rounds

    pooled = {b: copy.deepcopy(r) for b, (r, _) in own.items()}
    total = len(points(spec))

    def on_batch(i: int, batch: int) -> None:
        if progress is not None:
            progress(total, total, (f"repeat pass {i}/{spec.processes - 1}", batch), None)

    def on_rounds(i: int, batch: int, got) -> None:
        if batch not in own:
            return  # no point of this batch size got to its rounds here: nothing to pool
        _, measured = own[batch]
        ms = {m.mode: m for m in measured}
        timed = [m for m in pooled[batch].samples_ms
                 if m not in pooled[batch].failed and ms[m].status == "ok"]
        problem = _unpoolable(got, timed)
        if problem:
            # The points keep the processes they hold; they say which pass is missing.
            for mode in timed:
                iv = ms[mode].intervals
                iv.repeat_errors = [*(iv.repeat_errors or []), problem[:300]]
        else:
            pooled[batch].extend(got)
            store_rounds(ms, timed, pooled[batch], config)
            on_timed_steps(ms)  # the step moved: energy per step follows it
            host_split.fill(ms)  # and so do the split and the projection
        for mode in timed:
            _update(sink, ms[mode])

    if not own:
        return "done"
    repeat.passes(replace(spec, batch_sizes=tuple(own)), on_batch=on_batch, on_rounds=on_rounds,
                  should_stop=should_stop, children=children)
    return "cancelled" if should_stop is not None and should_stop() else "done"


def _unpoolable(got, timed: list[str]) -> str | None:
    """Why a pass's entry cannot join the rounds so far (None: it can). A mode missing or
    failed there would leave rounds that no longer pair, so the whole entry stays out."""
    if isinstance(got, Exception):
        return str(got)
    for mode in timed:
        if mode in got.failed:
            return f"{mode} failed in a repeat process: {got.failed[mode]}"
        if len(got.samples_ms.get(mode, ())) != got.n or not got.n:
            return f"{mode} has no rounds in a repeat process"
    return None


def _update(sink: Sink, measurement: Measurement) -> None:
    # A sink without update() (a caller's own) keeps the first pass's point.
    update = getattr(sink, "update", None)
    if update is not None:
        update(measurement)
