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

import gc
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from runner.core import cuda_fatal, rescue
from runner.core.timing import TIMING_PRESETS, for_processes, phase
from runner.core.workloads import Workload, resolve
from runner.format.bundle import now_iso
from runner.format.specs import SpecError, SweepSpec, check_sweep

__all__ = ["SpecError", "SweepSpec", "run_sweep", "validate_spec"]

class Sink(Protocol):
    def start(self, environment: dict, run: dict) -> None: ...
    def point(self, measurement: dict) -> None: ...
    def finish(self, status: str) -> None: ...


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def default_device() -> str:
    """DESIGN.md: cuda when available, else cpu."""
    return "cuda" if cuda_available() else "cpu"


def validate_spec(spec: SweepSpec, allow_import: bool = True) -> Workload:
    """The leaf's one check (runner/format/specs.py), then what needs this machine: the
    workload resolved (a user factory imported) and the device present. Raise SpecError /
    WorkloadError (one line naming the bad value); return the resolved workload."""
    spec = check_sweep(spec, allow_import=allow_import)
    workload = resolve(spec.workload, dict(spec.params or {}), allow_import=allow_import)
    _check_device(spec.device)
    return workload


def _check_device(device: str) -> None:
    if device == "cpu":
        return
    if not cuda_available():
        raise SpecError(f"device {device!r}: no CUDA device is available on this machine")
    import torch

    idx = int(device[5:]) if ":" in device else 0
    if idx >= torch.cuda.device_count():
        raise SpecError(f"device {device!r}: this machine has "
                        f"{torch.cuda.device_count()} CUDA device(s)")


def points(spec: SweepSpec) -> list[tuple[str, int]]:
    """Batch-major order: a partial sweep still compares every mode at the sizes done."""
    return [(mode, b) for b in spec.batch_sizes for mode in spec.modes]


def run_sweep(spec: SweepSpec, sink: Sink, *, progress: Callable | None = None,
              should_stop: Callable[[], bool] | None = None,
              command: str | None = None) -> str:
    """Run the sweep; return the final run status (done | cancelled)."""
    from runner.core import environment
    from runner.core.point import measure_batch, reset_state

    workload = validate_spec(spec)
    config = for_processes(TIMING_PRESETS[spec.timing], spec.processes)
    env = environment.capture(spec.device)
    run: dict[str, Any] = {
        "uuid": str(uuid.uuid4()), "workload": workload.name,
        "workload_params": dict(workload.params), "dtype": workload.dtype,
        "created_at": now_iso(), "finished_at": None, "status": "running",
        "label": spec.label, "source": "measured", "command": command,
    }
    sink.start(env, run)
    total = len(points(spec))
    doing = spec.modes[0] if len(spec.modes) == 1 else f"{len(spec.modes)} modes"
    last: dict | None = None
    status, done = "done", 0
    try:
        repeats = _repeat_passes(spec, progress, should_stop)  # a stop here: next check
        reset_state(spec.device)  # whatever ran in this process before is not charged
        gc.freeze()
        for batch in spec.batch_sizes:
            if should_stop is not None and should_stop():
                status = "cancelled"
                break
            if progress is not None:
                progress(done, total, (doing, batch), last)
            spent: dict[str, float] = {}
            with phase(spent, "point"):
                measured = measure_batch(workload, spec.modes, batch, spec.device, config,
                                         extra_rounds=_pooled(repeats, batch))
            wall = spent["point"]
            for last in measured:
                last["details"]["point_wall_s"] = wall / len(measured)
                sink.point(last)
                done += 1
                if progress is not None and last["status"] == "error" and done < total:
                    progress(done, total, (doing, batch), last)
            if cuda_fatal.lost_in(measured):  # no more GPU work here: the rest elsewhere
                status, done = rescue.rest_of_sweep(spec, batch, sink, progress,
                                                    should_stop, done, total)
                break
            # What survives a point's cleanup (torch, Dynamo and Inductor modules, the
            # sink) lives on: freeze it so each later gc.collect (cleanup, and before
            # timing) scans only new objects. Seen on the H200: ~0.3 s of collection per
            # point otherwise, most of the harness overhead outside setup and timing.
            gc.freeze()
    except KeyboardInterrupt:
        status = "cancelled"
    except BaseException:
        sink.finish("failed")
        raise
    finally:
        gc.unfreeze()  # hand the objects back to the collector for whatever runs next
    if progress is not None:
        progress(total if status == "done" else done, total, None, last)
    sink.finish(status)
    return status


def _repeat_passes(spec: SweepSpec, progress, should_stop) -> dict[int, list] | None:
    """With --processes K: K - 1 passes over every batch size in fresh processes, before
    this process's own (runner/core/repeat.py says why whole passes)."""
    if spec.processes <= 1:
        return None
    from runner.core import repeat

    def on_batch(i: int, batch: int) -> None:
        if progress is not None:
            progress(0, len(points(spec)), (f"repeat pass {i}/{spec.processes - 1}", batch),
                     None)

    request = {"workload": spec.workload, "params": dict(spec.params or {}),
               "modes": list(spec.modes), "batch_sizes": list(spec.batch_sizes),
               "device": spec.device, "timing": spec.timing, "processes": spec.processes}
    return repeat.passes(request, spec.processes, on_batch=on_batch,
                         should_stop=should_stop)


def _pooled(repeats: dict[int, list] | None, batch: int) -> Callable | None:
    """The repeat passes' rounds of one batch size, for measure_batch to pool; a pass that
    failed there makes the batch size's points errors that name it."""
    if repeats is None:
        return None

    def extra(prepared_modes: tuple[str, ...]) -> list:
        got = repeats.get(batch, [])
        for r in got:
            if isinstance(r, Exception):
                raise r
        return got

    return extra
