"""One profiled step of a point, kept as a timeline: what the host launched and when, what
the GPU ran and when, and the idle gaps between (issue 12).

Torch-free: the runner hands in its profiler events through the seam of
runner/core/profiling.py (anything with name, on_gpu, start_us, end_us, annotation,
stream, correlation), the database stores the result, the dashboard draws it and exports
it as a Chrome trace / Perfetto file.

A trace, as stored in a bundle's measurement ("trace") and in the database:

    {"step": 2, "steps": 3,            # which profiled step was kept, of how many
     "match": "correlation",           # how kernels were tied to steps: or "time", "mixed"
     "cpu_us": [0.0, 812.5],           # the host's step, relative to its own start
     "gpu_us": [14.2, 990.1] | null,   # the span of the step's GPU work, same origin
     "names": ["cudaLaunchKernel", "ampere_sgemm_32x32", ...],
     "cpu": [[name index, start_us, dur_us], ...],          # launches, graph launches, copies
     "gpu": [[name index, start_us, dur_us, stream], ...],  # kernels and copies
     "dropped": 0}                      # events left out to stay within MAX_TRACE_EVENTS

Events are lists rather than objects: a sweep of 32 points with 128 events each stays a
few hundred kilobytes (the shipped samples must stay under 2 MB).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from contract.json_shape import JsonObject
from contract.limits import MAX_TRACE_EVENTS, MAX_TRACE_NAME

# One step's timeline as stored (a bundle's measurement "trace", the traces table): JSON,
# checked by validate_trace() where it enters; read by the functions below.
TraceDoc = JsonObject


@dataclass(frozen=True)
class PointTrace:
    """One point's kept trace with what it is of (db/queries.py point_traces)."""
    run_id: int
    mode: str
    batch_size: int
    trace: TraceDoc

# Runtime and driver entry points that launch one kernel each. The profiler may add a
# version suffix (cudaLaunchKernel_v7000), hence the prefix match.
HOST_LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                     "cuLaunchKernelEx", "cudaLaunchCooperativeKernel")
GRAPH_LAUNCH_NAME = "cudaGraphLaunch"
HOST_COPY_PREFIXES = ("cudaMemcpy", "cudaMemset", "cuMemcpy", "cuMemset")
GPU_NON_KERNEL_PREFIXES = ("Memcpy", "Memset")
# Ranges the profiler itself (ProfilerStep#N) or code (record_function, Inductor's
# "## Call CompiledFxGraph ##") marks on the GPU timeline. They span many kernels: summed
# as if they were kernels they double the busy time (seen on the H200, torch 2.11).
GPU_ANNOTATION_PREFIXES = ("ProfilerStep", "## ")
# The host range the profiler opens per step (torch renames ProfilerStep#N ProfilerStep*).
STEP_PREFIX = "ProfilerStep"
# What each kind of event is called on the timeline.
KIND_LABELS = {"launch": "kernel launch", "graph": "cudaGraphLaunch", "copy": "memcpy / memset",
               "kernel": "kernel", "gpu-copy": "GPU copy"}


MATCHES = ("correlation", "time", "mixed")


class TraceError(ValueError):
    """A stored trace that does not follow the format. str() is one line."""


def host_kind(name: str) -> str | None:
    """'launch', 'graph' or 'copy' for a host call the timeline shows; None otherwise."""
    if name.startswith(GRAPH_LAUNCH_NAME):
        return "graph"
    if name.startswith(HOST_LAUNCH_NAMES):
        return "launch"
    if name.startswith(HOST_COPY_PREFIXES):
        return "copy"
    return None


def gpu_kind(name: str) -> str:
    return "gpu-copy" if name.startswith(GPU_NON_KERNEL_PREFIXES) else "kernel"


def is_gpu_work(e: Any) -> bool:
    return e.on_gpu and not (getattr(e, "annotation", False)
                             or e.name.startswith(GPU_ANNOTATION_PREFIXES))


def short_name(name: str) -> str:
    """A kernel's name without return type, template arguments and parameters:
    'void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)' ->
    'at::native::vectorized_elementwise_kernel'."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            if ch == "(" and out:
                break
            out.append(ch)
    short = "".join(out).strip() or name.strip()
    return short[:MAX_TRACE_NAME]


# --- choosing and bounding one step ---------------------------------------------------------

def _representative(busy: list[float], mean: float) -> int:
    """The step to keep: neither the first nor, given three or more, the last; of the
    others the one whose GPU busy time is closest to the mean (the earliest of ties)."""
    n = len(busy)
    candidates = range(1, n - 1) if n >= 3 else range(1, n) if n == 2 else range(1)
    return min(candidates, key=lambda i: (abs(busy[i] - mean), i))


def select_step(events: Iterable[Any], max_events: int = MAX_TRACE_EVENTS
                ) -> TraceDoc | None:
    """The trace of one representative step of a profiled pass; None when the events mark
    no step (no ProfilerStep range on the host) or hold no GPU work.

    Kernels are tied to the step whose host call launched them, by the profiler's
    correlation id (a graph's kernels carry the id of their cudaGraphLaunch); a kernel
    without a matching id, by time (it belongs to the last step that began before it). The step kept
    is neither the first (it carries the profiler's own start-up) nor, given three or more,
    the last (the profiled pass synchronizes inside it); among the others, the one whose
    GPU busy time is closest to the mean over all steps: the point's gpu_busy_ms is that
    mean, so the picture and the figure agree."""
    evs = list(events)
    steps = sorted((e for e in evs if not e.on_gpu and e.name.startswith(STEP_PREFIX)),
                   key=lambda e: e.start_us)
    if not steps:
        return None
    starts = [s.start_us for s in steps]

    def step_at(t: float) -> int | None:
        i = bisect.bisect_right(starts, t) - 1
        return i if i >= 0 else None

    host: list[tuple[int, Any]] = []
    launched: dict[int, int] = {}
    for e in evs:
        if e.on_gpu or host_kind(e.name) is None:
            continue
        i = step_at(e.start_us)
        if i is None or e.start_us > steps[i].end_us:
            continue
        host.append((i, e))
        if getattr(e, "correlation", None) is not None:
            launched[e.correlation] = i
    work = [e for e in evs if is_gpu_work(e)]
    if not work:
        return None
    tied = [launched.get(c) if (c := getattr(e, "correlation", None)) is not None else None
            for e in work]
    n_tied = sum(i is not None for i in tied)
    match = ("correlation" if n_tied == len(work) else "time" if n_tied == 0 else "mixed")
    # A kernel whose launch call is not among the host events (no id, or one the profiler
    # did not pair) falls back to time rather than out of the picture.
    by_id = [(i if i is not None else step_at(e.start_us), e) for i, e in zip(tied, work,
                                                                               strict=True)]
    busy = [0.0] * len(steps)
    for i, e in by_id:
        if i is not None:
            busy[i] += e.end_us - e.start_us
    k = _representative(busy, sum(e.end_us - e.start_us for e in work) / len(steps))
    origin = steps[k].start_us
    cpu = sorted(((e.name, e.start_us - origin, e.end_us - e.start_us)
                  for i, e in host if i == k), key=lambda x: x[1])
    gpu = sorted(((e.name, e.start_us - origin, e.end_us - e.start_us,
                   getattr(e, "stream", None)) for i, e in by_id if i == k),
                 key=lambda x: x[1])
    gpu_span = ([min(g[1] for g in gpu), max(g[1] + g[2] for g in gpu)] if gpu else None)
    return build(cpu, gpu, cpu_end=steps[k].end_us - origin, gpu_span=gpu_span,
                 step=k + 1, steps=len(steps), match=match, max_events=max_events)


def bound(cpu: Sequence[Any], gpu: Sequence[Any], max_events: int
          ) -> tuple[list[Any], list[Any], int]:
    """At most `max_events` events, shared between the lanes (a lane that needs less than
    half leaves the rest to the other); each lane keeps its earliest events, so what is
    drawn is the step's start, complete, rather than a sample with holes."""
    half = max_events // 2
    n_cpu = min(len(cpu), max(half, max_events - len(gpu)))
    n_gpu = min(len(gpu), max_events - n_cpu)
    return list(cpu[:n_cpu]), list(gpu[:n_gpu]), len(cpu) - n_cpu + len(gpu) - n_gpu


def build(cpu: Sequence[Any], gpu: Sequence[Any], *, cpu_end: float,
          gpu_span: list[Any] | None,
          step: int = 1, steps: int = 1, match: str = "correlation",
          max_events: int = MAX_TRACE_EVENTS) -> TraceDoc:
    """A trace from time-ordered (name, start_us, dur_us) host calls and (name, start_us,
    dur_us, stream) GPU events, bounded to `max_events`."""
    cpu, gpu, dropped = bound(cpu, gpu, max_events)
    names: dict[str, int] = {}

    def idx(name: str, short: bool) -> int:
        n = short_name(name) if short else name[:MAX_TRACE_NAME]
        return names.setdefault(n, len(names))

    def r(x: float) -> float:
        return round(float(x), 3)  # nanoseconds: all the profiler resolves

    return {
        "step": step, "steps": steps, "match": match,
        "cpu_us": [0.0, r(cpu_end)],
        "gpu_us": [r(gpu_span[0]), r(gpu_span[1])] if gpu_span else None,
        "cpu": [[idx(n, False), r(s), r(d)] for n, s, d in cpu],
        "gpu": [[idx(n, True), r(s), r(d), None if st is None else int(st)]
                for n, s, d, st in gpu],
        "names": list(names),
        "dropped": dropped,
    }


# --- reading a trace --------------------------------------------------------------------------

@dataclass(frozen=True)
class TraceEvent:
    """One event of a stored step, as the lanes draw it."""

    lane: str  # "cpu" or "gpu"
    kind: str  # KIND_LABELS' keys
    name: str
    start_us: float
    end_us: float
    dur_us: float
    stream: Any = None  # the GPU stream; None on the host lane


def events(trace: TraceDoc) -> list[TraceEvent]:
    """Every event of the step: the host's launches, then the GPU lane's work."""
    names = trace["names"]
    rows = []
    for i, s, d in trace["cpu"]:
        rows.append(TraceEvent("cpu", host_kind(names[i]) or "launch", names[i], s, s + d, d))
    for i, s, d, st in trace["gpu"]:
        rows.append(TraceEvent("gpu", gpu_kind(names[i]), names[i], s, s + d, d, st))
    return rows


def merge(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals as disjoint, ordered intervals: two kernels overlapping on two
    streams keep the GPU busy once, not twice."""
    out: list[list[float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def window(trace: TraceDoc) -> tuple[float, float]:
    """The profiled range as recorded: from the host's ProfilerStep start until both sides
    are done. It holds the profiler's own lead-in; the lanes draw step_span instead."""
    end = trace["cpu_us"][1]
    if trace.get("gpu_us"):
        end = max(end, trace["gpu_us"][1])
    ends = [s + d for _, s, d, *_ in (*trace["cpu"], *trace["gpu"])]
    return 0.0, max([end, *ends])


# Launch latency: a kernel starts a few microseconds after its launch call even on an idle
# GPU. A first kernel later than this after the host's last call waited for earlier work.
QUEUE_MIN_US = 20.0


def step_span(trace: TraceDoc) -> tuple[float, float]:
    """The step's own span: from its first host call (launch, graph launch, copy) to its
    last GPU event's end. The profiled range before the first call is the profiler's
    ProfilerStep bookkeeping, not the step (on the H200 it made a 0.136 ms graph replay
    read 0.70 ms). A lane without events falls back on the other, then on window()."""
    cpu, gpu = trace["cpu"], trace["gpu"]
    starts = [s for _, s, _ in cpu] or [s for _, s, _, _ in gpu]
    if not starts:
        return window(trace)
    lo = min(starts)
    ends = [s + d for _, s, d, _ in gpu] or [s + d for _, s, d in cpu]
    return lo, max(lo, max(ends))


def queued_until(trace: TraceDoc) -> float | None:
    """When the GPU began this step's work, if until then it was still running earlier
    steps': the host had issued every call of the step more than QUEUE_MIN_US before the
    first kernel started (it ran ahead, as a GPU-bound graph replay does). That wait is
    the previous step's work, not idle time. None when the GPU waited for the host."""
    if not trace["cpu"] or not trace["gpu"]:
        return None
    first_kernel = min(s for _, s, _, _ in trace["gpu"])
    host_done = max(s + d for _, s, d in trace["cpu"])
    return first_kernel if first_kernel - host_done > QUEUE_MIN_US else None


@dataclass(frozen=True)
class GpuIdle:
    """The GPU lane's idle time over the step's own span (step_span). None figures for a
    trace without a GPU lane."""

    idle_us: float | None
    span_us: float  # first call to last kernel end
    step_us: float  # the same less a queued start: what compares with the timed step
    busy_us: float | None
    gaps: list[tuple[float, float]]  # (start, end) each
    queued: tuple[float, float] | None  # waiting behind the previous step (host ahead)


def gpu_idle(trace: TraceDoc) -> GpuIdle:
    """Idle gaps of the GPU lane over the step's own span (GpuIdle says what each is)."""
    lo, hi = step_span(trace)
    if not trace["gpu"]:
        return GpuIdle(idle_us=None, span_us=hi - lo, step_us=hi - lo, busy_us=None,
                       gaps=[], queued=None)
    q = queued_until(trace)
    busy = merge((s, s + d) for _, s, d, _ in trace["gpu"])
    gaps, t = [], (lo if q is None else q)
    for s, e in busy:
        if s > t:
            gaps.append((t, min(s, hi)))
        t = max(t, e)
    if t < hi:
        gaps.append((t, hi))
    idle = sum(e - s for s, e in gaps)
    return GpuIdle(idle_us=idle, span_us=hi - lo, step_us=hi - (lo if q is None else q),
                   busy_us=sum(e - s for s, e in busy), gaps=gaps,
                   queued=None if q is None else (lo, q))


def _ms(us: float) -> str:
    ms = us / 1e3
    return f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def idle_text(trace: TraceDoc, timed_ms: float | None = None) -> str:
    """The line beside a lane pair: 'GPU idle 0.860 ms of 0.990 ms profiled · timed step
    0.740 ms (median)'; where the host ran ahead, the queued wait before the step too.
    The timed figure stands beside the profiled one so a reader never meets two step
    times for one point without both being named (STEP_TIMES_NOTE says why they differ)."""
    g = gpu_idle(trace)
    if g.idle_us is None:
        parts = ["no GPU lane"]
    else:
        parts = [f"GPU idle {_ms(g.idle_us)} ms of {_ms(g.step_us)} ms profiled"]
        if g.queued is not None:
            a, b = g.queued
            parts.append(f"{_ms(b - a)} ms before it queued behind the previous step")
    if timed_ms is not None and timed_ms == timed_ms and timed_ms > 0:
        parts.append(f"timed step {_ms(timed_ms * 1e3)} ms (median)")
        # Where the two differ by more than half, the likely reason, in a few words.
        ratio = (g.step_us / 1e3) / timed_ms
        if ratio > DIFFER:
            parts.append("profiled longer: the profiler slows the host's calls")
        elif ratio < 1 / DIFFER:
            parts.append("profiled shorter: host work before the first launch is not drawn")
    return " · ".join(parts)


DIFFER = 1.5  # profiled / timed beyond this (either way) gets its reason beside it


STEP_TIMES_NOTE = (
    "Two step times per point, on purpose: 'profiled' is the one step drawn, from its first "
    "launch (or, where the host ran ahead and the GPU was still busy with the previous "
    "step, its first kernel) to its last kernel's end, under the profiler; 'timed' is the "
    "median step of the timing rounds, without the profiler. The profiler's callbacks slow "
    "every host call, so a launch-bound step reads longer profiled; host work before the "
    "first launch (Python, Dynamo's guard checks) is in the timed step but not in the drawn "
    "span, so a step of few launches can read shorter. A GPU-bound step agrees.")


def kernel_sum_us(trace: TraceDoc) -> float:
    """Sum of the GPU lane's durations (kernels and copies): the point's gpu_busy_ms
    counts the same."""
    return float(sum(d for _, _, d, _ in trace["gpu"]))


# --- Chrome trace / Perfetto ------------------------------------------------------------------

class ChromeEvent(TypedDict, total=False):
    """One event of the Trace Event Format (Chrome's; Perfetto reads it): a metadata
    ('M') event naming a process or thread in `args`, or a complete ('X') event."""
    ph: str
    name: str
    cat: str
    pid: int
    tid: int
    ts: float  # microseconds
    dur: float
    args: dict[str, str]


class ChromeTrace(TypedDict):
    """A Trace Event Format file in its object form."""
    traceEvents: list[ChromeEvent]
    displayTimeUnit: str
    otherData: dict[str, str]


def chrome_trace(traces: Sequence[tuple[str, TraceDoc]]) -> ChromeTrace:
    """A Chrome trace event file (opens in ui.perfetto.dev and chrome://tracing): one
    process per labelled trace, a 'CPU launches' thread and one thread per GPU stream;
    every event a complete ('X') event in microseconds."""
    out: list[ChromeEvent] = []  # the file's events
    for pid, (label, trace) in enumerate(traces, start=1):
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": label}})
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": 0,
                    "args": {"name": "CPU launches"}})
        streams: dict[Any, int] = {}
        for e in events(trace):
            if e.lane == "cpu":
                tid = 0
            else:
                if e.stream not in streams:
                    streams[e.stream] = len(streams) + 1
                    shown = "?" if e.stream is None else e.stream
                    out.append({"ph": "M", "name": "thread_name", "pid": pid,
                                "tid": streams[e.stream],
                                "args": {"name": f"GPU stream {shown}"}})
                tid = streams[e.stream]
            out.append({"ph": "X", "name": e.name, "cat": e.kind, "pid": pid,
                        "tid": tid, "ts": e.start_us, "dur": e.dur_us})
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"source": "launchbench", "note": "one profiled step per point, "
                          "times relative to the host's step start"}}


# --- checking a stored trace -------------------------------------------------------------------

def validate_trace(trace: Any, where: str = "trace") -> None:
    """Raise TraceError naming the first value that breaks the format or its bounds."""
    if not isinstance(trace, dict):
        raise TraceError(f"{where} must be an object or null")
    names = trace.get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) and len(n) <= MAX_TRACE_NAME
                                              for n in names):
        raise TraceError(f"{where}.names must be a list of names of at most "
                         f"{MAX_TRACE_NAME} characters")
    lanes = (("cpu", 3), ("gpu", 4))
    total = 0
    for lane, arity in lanes:
        evs = trace.get(lane)
        if not isinstance(evs, list):
            raise TraceError(f"{where}.{lane} must be a list of events")
        total += len(evs)
        for j, ev in enumerate(evs):
            _check_event(ev, arity, len(names), f"{where}.{lane}[{j}]")
    if total > MAX_TRACE_EVENTS:
        raise TraceError(f"{where} holds {total} events, more than {MAX_TRACE_EVENTS}")
    if len(names) > total:
        raise TraceError(f"{where}.names holds {len(names)} names for {total} events")
    for f in ("dropped", "step", "steps"):
        v = trace.get(f)
        if type(v) is not int or v < 0:
            raise TraceError(f"{where}.{f} {v!r} must be a non-negative whole number")
    if trace.get("match") not in MATCHES:
        raise TraceError(f"{where}.match {trace.get('match')!r} is not one of "
                         f"{', '.join(MATCHES)}")
    for f, nullable in (("cpu_us", False), ("gpu_us", True)):
        v = trace.get(f)
        if v is None and nullable:
            continue
        if not (isinstance(v, list) and len(v) == 2 and all(_finite(x) for x in v)
                and v[0] <= v[1]):
            raise TraceError(f"{where}.{f} {str(v)[:40]} must be [start, end] in "
                             "microseconds")


def _finite(x: Any) -> bool:
    return (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and abs(x) <= 1e12)


def _check_event(ev: Any, arity: int, n_names: int, where: str) -> None:
    if not isinstance(ev, list) or len(ev) != arity:
        raise TraceError(f"{where} must be a list of {arity} values")
    i, s, d = ev[:3]
    if type(i) is not int or not 0 <= i < n_names:
        raise TraceError(f"{where}: name index {i!r} is not in names")
    if not _finite(s) or not _finite(d) or d < 0:
        raise TraceError(f"{where}: start {s!r} and duration {d!r} must be finite, the "
                         "duration not negative")
    if arity == 4 and ev[3] is not None and (type(ev[3]) is not int or ev[3] < 0):
        raise TraceError(f"{where}: stream {ev[3]!r} must be a non-negative whole number "
                         "or null")
