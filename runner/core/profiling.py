"""Launch counting and GPU busy time: a separate profiled pass, after timing.

The profiler's own overhead would distort step times, so it never runs while timing;
it answers what the timing cannot: how many launches the host made per step, how many
graph launches, how many kernels the GPU ran and how long they kept it busy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from contract.measurement import Launches, Trace

# The name tables live with the trace format (contract/trace.py), which the
# dashboard reads without torch.
from contract.trace import (  # noqa: F401 - re-exported for callers
    GPU_ANNOTATION_PREFIXES,
    GPU_NON_KERNEL_PREFIXES,
    GRAPH_LAUNCH_NAME,
    HOST_COPY_PREFIXES,
    HOST_LAUNCH_NAMES,
    select_step,
    validate_trace,
)


class ProfilingError(RuntimeError):
    """The trace cannot be trusted (e.g. no GPU kernels at all)."""


@dataclass(frozen=True)
class Event:
    """The little the counting needs from a profiler event (a seam for tests)."""

    name: str
    on_gpu: bool
    start_us: float
    end_us: float
    annotation: bool = False  # a user/profiler range on the GPU timeline, not work
    stream: int | None = None  # a GPU event's stream
    # The profiler's correlation id: a launch call and the kernels it launched share it
    # (a graph's kernels carry their cudaGraphLaunch's), which ties kernels to their step.
    correlation: int | None = None


def count(events: Iterable[Event], steps: int) -> Launches:
    """Per-step launch figures from the events of `steps` profiled steps."""
    host = graph = copies = kernels = gpu_ops = triton = 0
    busy_us = 0.0
    spans: list[tuple[float, float]] = []
    for e in events:
        if e.on_gpu and (e.annotation or e.name.startswith(GPU_ANNOTATION_PREFIXES)):
            continue
        if e.on_gpu:
            gpu_ops += 1
            busy_us += e.end_us - e.start_us
            spans.append((e.start_us, e.end_us))
            if not e.name.startswith(GPU_NON_KERNEL_PREFIXES):
                kernels += 1
                triton += e.name.startswith("triton")  # Inductor-generated code ran
        elif e.name.startswith(GRAPH_LAUNCH_NAME):
            graph += 1
        elif e.name.startswith(HOST_LAUNCH_NAMES):
            host += 1
        elif e.name.startswith(HOST_COPY_PREFIXES):
            copies += 1
    if kernels == 0:
        raise ProfilingError("the profiler trace holds no GPU kernels (broken trace, or "
                             "the step launches no work)")
    return Launches(
        host_launches_per_step=host / steps,
        graph_launches_per_step=graph / steps,
        gpu_kernels_per_step=kernels / steps,
        # Sum of kernel and copy durations (the contract's figure); the union of their
        # intervals is kept too: it differs when kernels overlap on several streams.
        gpu_busy_ms=busy_us / 1e3 / steps,
        profiled_steps=steps, host_copies_per_step=copies / steps,
        gpu_ops_per_step=gpu_ops / steps, triton_kernels_per_step=triton / steps,
        gpu_busy_union_ms=_union_us(spans) / 1e3 / steps)


def _union_us(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def profile_step(step: Callable[[], object], steps: int,
                 trace: bool = False) -> tuple[Launches, Trace]:
    """Run `step` under torch.profiler (CPU + CUDA) and count per step; with `trace`, also
    keep one representative step's timeline (contract/trace.py)."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, schedule

    # Without a CUPTI teardown at the end of a session, CUPTI's callbacks stay
    # subscribed and every later kernel launch in this process pays for them: seen on
    # the H200 (torch 2.11, CUDA 13) as a launch-bound eager step 35% slower after the
    # first profiled pass, i.e. every later point of a sweep would be skewed. Kineto
    # reads this variable; torch itself sets it to 0 where teardown crashes with CUDA
    # graphs (CUDA < 12.6), and an explicit setting by the user is kept.
    os.environ.setdefault("TEARDOWN_CUPTI", "1")
    collected: list = []
    # wait 1, warm up 2: the profiler's first steps carry its own start-up costs.
    sched = schedule(wait=1, warmup=2, active=steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 on_trace_ready=lambda p: collected.extend(p.events())) as prof:
        for i in range(3 + steps):
            step()
            if i in (2, 2 + steps):
                # Drain the GPU at the window's edges so kernels of warm-up steps do not
                # land inside it and the last active step's kernels are not cut off.
                torch.cuda.synchronize()
            prof.step()
    events = [Event(e.name, e.device_type == DeviceType.CUDA,
                    float(e.time_range.start), float(e.time_range.end),
                    bool(getattr(e, "is_user_annotation", False)),
                    _int(getattr(e, "device_resource_id", None))
                    if e.device_type == DeviceType.CUDA else None,
                    _int(getattr(e, "id", None)) or None)
              for e in collected]
    return count(events, steps), keep_trace(events) if trace else Trace()


def keep_trace(events: list[Event]) -> Trace:
    """One step's timeline, checked as a bundle would check it. Keeping it is a bonus:
    a failure here leaves the point's figures standing and says why (Trace.error)."""
    try:
        kept = select_step(events)
        if kept is not None:
            validate_trace(kept)
        return Trace(timeline=kept)
    except Exception as e:  # noqa: BLE001 - never lose a measured point to its picture
        return Trace(error=f"{type(e).__name__}: {str(e)[:300]}")


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None
