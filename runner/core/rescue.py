"""The batch sizes left after a sticky CUDA error, measured in a fresh process.

A sticky CUDA error (runner/core/cuda_fatal.py) ends what the sweep's own process can do
on the GPU, not what the GPU can do: a new process gets a new context. So the sweep hands
the remaining batch sizes to `python -m runner.core.rescue` (the request as JSON on
stdin, one JSON line per measured point on stdout), which measures them exactly as the
sweep would (runner/core/point.py measure_batch) and stops after a batch size that loses
its context too; the parent then starts another for what is left. Each child consumes at
least one batch size, so there are at most as many children as batch sizes.

What the rest lacks: `--processes` pooling (the repeat passes ran before the sweep, in
processes that met the same error); each such point records processes = 1.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from typing import IO, cast

from contract.measurement import Measurement
from contract.specs import SweepSpec
from runner.core.cuda_fatal import lost_in, lost_message
from runner.core.repeat import child, end, read_spec

CHILD_TIMEOUT_S = 3600


def run_rest(spec: SweepSpec, emit: Callable[[Measurement], None],
             should_stop: Callable[[], bool] | None = None) -> bool:
    """Measure spec.batch_sizes in fresh processes, emit(measurement) for each point in
    order. Returns False when stopped early (should_stop), else True."""
    rest = list(spec.batch_sizes)
    while rest:
        if should_stop is not None and should_stop():
            return False
        err = tempfile.TemporaryFile("w+")
        # Its own session: a Ctrl-C meant for the sweep reaches the sweep, which ends the
        # child itself (below), instead of racing it.
        proc = child("runner.core.rescue", replace(spec, batch_sizes=tuple(rest)), err,
                     start_new_session=True)
        seen: list[int] = []
        lost_at: int | None = None
        try:
            for line in cast(IO[str], proc.stdout):  # stdout=PIPE (child): never None
                m = Measurement.from_json(json.loads(line)["point"])
                emit(m)
                if m.batch_size not in seen:
                    seen.append(m.batch_size)
                hit = lost_in([m])
                lost_at = hit[0] if hit else lost_at
                if should_stop is not None and should_stop():
                    return False
            proc.wait(timeout=CHILD_TIMEOUT_S)
        finally:
            tail = end(proc, err)[:300]
        left = [b for b in rest if b not in seen]
        if lost_at is None and left:
            # The child died without a word on these (killed, a crash below Python):
            # they are stored as not run, with its last line, rather than retried forever.
            for b in left:
                for mode in spec.modes:
                    emit(Measurement(mode, b, status="skipped", message=f"not run: the "
                                     f"fresh process for the rest exited {proc.returncode}: "
                                     f"{tail}"))
            return True
        rest = left
    return True


def rest_of_sweep(spec, lost_batch: int, sink, progress, should_stop, done: int,
                  total: int) -> tuple[str, int]:
    """run_sweep's part after batch size `lost_batch` lost the context: the batch sizes
    after it, measured in fresh processes and handed to the sink as they come. Returns
    (run status: failed, or cancelled when stopped early; points done)."""
    rest = list(spec.batch_sizes[spec.batch_sizes.index(lost_batch) + 1:])
    count = [done]

    def emit(m: Measurement) -> None:
        sink.point(m)
        count[0] += 1
        if progress is not None:
            progress(count[0], total, (m.mode, m.batch_size), m)

    finished = run_rest(replace(spec, batch_sizes=tuple(rest)), emit, should_stop) \
        if rest else True
    return ("failed" if finished else "cancelled"), count[0]


RESCUED_NO_ENERGY = ("energy not measured: this batch size ran in a rescue process, after "
                     "the sweep's CUDA context was lost")


def main() -> int:
    from runner.core.energy import EnergyPlan
    from runner.core.point import measure_batch, reset_state
    from runner.core.timing import TIMING_PRESETS, for_processes
    from runner.core.workloads import resolve

    spec = read_spec()
    workload = resolve(spec.workload, dict(spec.params))
    config = for_processes(TIMING_PRESETS[spec.timing], 1)
    reset_state(spec.device)
    for batch in spec.batch_sizes:
        # No energy windows here: a rescue is about getting the points at all.
        measured = measure_batch(workload, spec.modes, int(batch), spec.device, config,
                                 energy_plan=EnergyPlan(RESCUED_NO_ENERGY))
        for m in measured:
            m.host.rescued = True  # measured after the sweep's process lost it
            print(json.dumps({"point": m.to_json()}), flush=True)
        if lost_in(measured):
            return 0  # this context is gone too: the parent starts another
    return 0


def not_run(modes, batch_sizes, lost_batch: int) -> list[Measurement]:
    """Points that were never measured, each saying why (a stop before the rest ran)."""
    return [Measurement(mode, b, status="skipped", message=lost_message(lost_batch))
            for b in batch_sizes for mode in modes]


if __name__ == "__main__":
    sys.exit(main())
