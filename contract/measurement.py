"""One (mode, batch size) point as a typed record, JSON only at the bundle and database
boundary (to_json / from_json).

A bundle's measurement is flat: ~30 contract fields beside a free `details` object. The
record groups them by what measured them (timing, the rounds' intervals, memory,
launches, setup and graph status, the host, the trace, a published source's citation),
and each field says where it lives in JSON: at the top level or under `details`, and
under which key. So the layout stays the bundle's (docs/ARCHITECTURE.md, "The result bundle")
while the code reads `m.timing.step_ms` and `m.intervals.vs_compile`, and every details
key a page, report or test reads is declared here rather than found by string.

Faithful to the files already written: a details key this record does not declare (an
older runner's, a published bundle's own notes) is kept in `extra` and written back; a
declared key stored as null is kept there too, so an import then export gives the same
keys. Unknown figures stay None, never 0. Standard library only (the contract: no torch, no
database).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from contract.energy import Energy, EnergyWindow, IdlePower
from contract.json_shape import JsonObject, as_json, exact, exact_list
from contract.trace import TraceDoc

TOP, DETAILS = "top", "details"

ENERGY_NUMBER_FIELDS = (
    "energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
    "avg_power_w", "idle_power_w", "energy_above_idle_mj_per_step", "energy_gain",
    "energy_gain_ci_low", "energy_gain_ci_high",
)

SPLIT_NUMBER_FIELDS = ("split_gpu_ms", "split_launch_ms", "split_rest_ms")

# A point's figures (docs/ARCHITECTURE.md, "The result bundle"), in the order a bundle writes them.
# Unknown is None, never 0.
NUMBER_FIELDS = (
    "step_ms", "step_ms_p10", "step_ms_p90", "samples", "latency_ms", "setup_s",
    "host_launches_per_step", "graph_launches_per_step", "gpu_kernels_per_step",
    "gpu_busy_ms", "graph_pool_bytes", "peak_allocated_bytes", "reserved_delta_bytes",
    "max_abs_err",
    # Version 3: 95% intervals over rounds. step_ms_ci_* bound the median step time;
    # speedup is the median of the per-round paired ratio eager / this mode, with its
    # interval; launch_us is the host's median cost of one trivial kernel launch over the
    # point's rounds.
    "step_ms_ci_low", "step_ms_ci_high", "speedup", "speedup_ci_low", "speedup_ci_high",
    "launch_us",
    # Version 5 (issue 28): energy per step from the GPU's energy counter, in windows
    # apart from the rounds (runner/core/energy.py), with its 95% interval; the mean power
    # over those windows; the device's idle power read once per sweep; energy per step
    # above that idle draw (may be negative: within the counter's error of idle); and
    # eager's energy per step over this mode's, paired per round of windows.
    *ENERGY_NUMBER_FIELDS,
    # Version 6 (issue 39): the step split into the GPU's busy time, the launches at the
    # host's launch cost, and the rest of the host's time (contract/host_split.py);
    # they add up to step_ms.
    *SPLIT_NUMBER_FIELDS,
    # Version 7 (issue 44): the mode's memory cost, what running it keeps on the GPU
    # beyond what eager keeps at the same batch size, each measured alone from a clean
    # state (runner/core/memory.py; docs/MEASUREMENT.md, "Memory"). Its parts are
    # graph_pool_bytes and the default pool's share (reserved_delta_bytes less the pool)
    # against eager's own (details.eager_reserved_delta_bytes).
    "memory_cost_bytes",
)
MEASUREMENT_FIELDS = (
    "mode", "batch_size", "status", "message", *NUMBER_FIELDS, "cudagraph_status",
    "correct", "stop_reason", "noisy", "host_unstable",
    # Why the energy figures are absent (no CUDA device, no NVML, --no-energy...): null
    # where they are present, and in bundles from before version 5.
    "energy_unavailable_reason",
    # Beyond the contract's list: raw per-step samples (ms, one per timed block) so any
    # statistic can be recomputed, and a free-form dict of details (clocks, setup split,
    # skip reason, host time per step...).
    "samples_ms", "launch_us_rounds", "details",
)
# Beside the fields above, not among them: the database keeps a point's trace in a table
# of its own (db/models.py, TraceRow), so reading points never loads timelines.
TRACE_FIELD = "trace"


def _top(default: Any = None, key: str | None = None,
         factory: Callable[[], Any] | None = None) -> Any:
    meta = {"where": TOP, "key": key}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _detail(key: str | None = None, read: Callable[[Any], Any] | None = None) -> Any:
    """A field stored under `details`. `read` turns its JSON into the field's record
    (None where the JSON is not exactly that record's: then it is kept as it came, in
    `extra`); json_shape.as_json writes it back."""
    return field(default=None, metadata={"where": DETAILS, "key": key, "read": read})


@dataclass
class MemorySnapshot:
    """One allocator snapshot (runner/core/memory.py's MemState, as stored)."""
    allocated_bytes: int
    reserved_bytes: int
    device_used_bytes: int  # total - free from the driver
    private_pool_bytes: int  # reserved in graph (private) pools
    private_pools: int
    private_segments: list[int]  # sizes of the private pools' segments (diagnosis)


@dataclass
class Clocks:
    """The GPU's clocks, temperature and power read before or after a point; None =
    unknown (runner/core/environment.py read_clocks)."""
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None


@dataclass
class SeparateGraphs:
    """A training step's forward + loss and its backward captured by hand, each in a
    pool of its own (runner/core/training.py): what the trees' shared pool is set against."""
    forward_pool_bytes: int
    backward_pool_bytes: int
    sum_bytes: int
    method: str


@dataclass
class CompileCounters:
    """What compiling did during a mode's setup (runner/core/compile_watch.py): Dynamo's
    and Inductor's counter deltas, the first cudagraph skip messages, and the torch that
    compiled."""
    unique_graphs: int = 0
    graph_breaks: int = 0
    cudagraph_skips: int = 0
    fxgraph_cache_hit: int = 0
    fxgraph_cache_miss: int = 0
    skip_messages: list[str] = field(default_factory=list)
    torch_version: str | None = None


@dataclass
class PairedRatio:
    """A ratio paired per round with its 95% interval (runner/core/stats.py
    ratio_interval): reduce-overhead against compile, the graphs' own gain."""
    median: float
    low: float
    high: float


def _paired(v: Any) -> PairedRatio | None:
    return exact(PairedRatio, v)


def _compile(v: Any) -> CompileCounters | None:
    return exact(CompileCounters, v)


def _snapshot(v: Any) -> MemorySnapshot | None:
    return exact(MemorySnapshot, v)


def _clocks(v: Any) -> Clocks | None:
    return exact(Clocks, v)


def _separate(v: Any) -> SeparateGraphs | None:
    return exact(SeparateGraphs, v)


def _windows(v: Any) -> list[EnergyWindow] | None:
    return exact_list(EnergyWindow, v)


@dataclass
class NoIdle:
    """Why the device's idle power was not read (no counter, --no-energy...)."""
    unavailable_reason: str


def _idle(v: Any) -> IdlePower | NoIdle | None:
    return exact(IdlePower, v) or exact(NoIdle, v)


class TreeGraph(TypedDict):
    """One graph CUDA Graph trees recorded (runner/core/training.py tree_graphs)."""
    graph_id: int
    kind: str | None  # forward, backward or inference; None where torch did not say
    pool: list[int] | str  # the memory pool's handle
    parent: int | None


class TreeGraphs(TypedDict, total=False):
    """details["cudagraph_trees"]: the graphs the trees recorded on the device, counted
    and listed, or only the error reading them (torch's private tree manager). Stored
    as it came: no record reads it back."""
    graphs: int
    pools: int
    forward: int
    backward: int
    nodes: list[TreeGraph]
    error: str


class HostPlacement(TypedDict, total=False):
    """details["host"]: the host policy's gate (runner/core/host_gate.py summary; only
    policy, None, where nothing was gated) and where the point ran
    (runner/core/placement.py). Stored as it came: no record reads it back."""
    policy: str | None
    shared: bool
    others_timing: int  # processes that timed during the point's sections
    wait_s: float
    windows: list[list[float | None]]  # each section's [started, ended], monotonic s
    cuda_visible_devices: str | None  # None: every GPU
    cpus: str | None  # None where the platform cannot say


@dataclass
class Timing:
    """The rounds' step time of this mode, per-call latency, and the harness's own
    bookkeeping (warm-up, phases: not measurements)."""
    step_ms: float | None = _top()
    step_ms_p10: float | None = _top()
    step_ms_p90: float | None = _top()
    samples: int | None = _top()
    samples_ms: list[float] = _top(factory=list)
    latency_ms: float | None = _top()
    stop_reason: str | None = _top()
    noisy: bool | None = _top()
    latency_ms_p10: float | None = _detail()
    latency_ms_p90: float | None = _detail()
    host_ms_per_step: float | None = _detail()
    warmup_steps: int | None = _detail()
    iters_per_block: int | None = _detail()
    num_threads: int | None = _detail()
    phase_s: dict[str, float] | None = _detail()
    point_wall_s: float | None = _detail()


@dataclass
class Intervals:
    """What the interleaved rounds give beyond the median: 95% intervals, the paired
    speedup, the host's launch cost, and which processes the rounds pool."""
    step_ms_ci_low: float | None = _top()
    step_ms_ci_high: float | None = _top()
    speedup: float | None = _top()
    speedup_ci_low: float | None = _top()
    speedup_ci_high: float | None = _top()
    launch_us: float | None = _top()
    launch_us_rounds: list[float] = _top(factory=list)
    host_unstable: bool | None = _top()
    rounds: int | None = _detail()
    rounds_s: float | None = _detail()
    round_modes: list[str] | None = _detail()
    processes: int | None = _detail()
    round_process: list[int] | None = _detail()
    # reduce-overhead against compile: the graphs' own gain.
    vs_compile: PairedRatio | None = _detail(read=_paired)
    # How `noisy` was judged (runner/core/rounds.py judged): the figure's interval
    # half-width, the target it was held to, and on which figure ("measured", or
    # "host-normalised" where the host's launch cost sets it).
    target_half_width: float | None = _detail()
    judged_half_width: float | None = _detail()
    judged_on: str | None = _detail()
    repeat_errors: list[str] | None = _detail()


@dataclass
class Memory:
    """What a mode keeps on the GPU, from runner/core/memory.py's pass over the modes one
    at a time, each from a clean state (version 7; docs/MEASUREMENT.md, "Memory").

    From version 7: reserved_delta_bytes is everything the mode keeps in torch's
    allocator once set up and stepped (its cached free blocks released), over the clean
    state: graph_pool_bytes in its graphs' private pools, the rest in the default pool
    (static inputs and outputs, workspaces, compiled code's buffers).
    memory_cost_bytes is that less eager's own (eager_reserved_delta_bytes, measured
    the same way at the same batch size): what choosing this mode costs. Negative only
    where the mode keeps less than eager, which its default-pool part against eager's
    shows. peak_allocated_bytes is the allocator's peak during a step over the clean
    state: transient, not kept. Before version 7 the figures came from snapshots around
    each mode's setup while the modes before it were alive (m0, m1, m2)."""
    graph_pool_bytes: int | None = _top()
    peak_allocated_bytes: int | None = _top()
    reserved_delta_bytes: int | None = _top()
    memory_cost_bytes: int | None = _top()
    m0: MemorySnapshot | None = _detail(read=_snapshot)
    m1: MemorySnapshot | None = _detail(read=_snapshot)
    m2: MemorySnapshot | None = _detail(read=_snapshot)
    device_used_delta_bytes: int | None = _detail()
    leftover_private_pools_at_m0: int | None = _detail()
    # Version 7: allocated bytes at this mode's clean start beyond the pass's first
    # clean state (0: nothing left behind), eager's kept bytes (the cost's baseline), and
    # whether the mode's compile in the pass missed Inductor's cache (a cold compile
    # autotunes, and its benchmarking buffer can land in a graph's pool).
    leftover_bytes_at_m0: int | None = _detail()
    eager_reserved_delta_bytes: int | None = _detail()
    memory_compile_cold: bool | None = _detail()
    memory_error: str | None = _detail()  # why the pass has no figures for this mode
    # A training step's graphs captured one per pool (runner/core/training.py).
    separate_graphs: SeparateGraphs | None = _detail(read=_separate)


@dataclass
class Launches:
    """The profiled pass's counts per step (runner/core/profiling.py) and a published
    kernel-chain point's own per-kernel figures."""
    host_launches_per_step: float | None = _top()
    graph_launches_per_step: float | None = _top()
    gpu_kernels_per_step: float | None = _top()
    gpu_busy_ms: float | None = _top()
    profiled_steps: int | None = _detail()
    host_copies_per_step: float | None = _detail()
    gpu_ops_per_step: float | None = _detail()
    triton_kernels_per_step: float | None = _detail()
    gpu_busy_union_ms: float | None = _detail()
    kernel_us: float | None = _detail()
    per_kernel_us: float | None = _detail()
    per_kernel_us_sync_each_kernel: float | None = _detail()


@dataclass
class Setup:
    """Compile or capture, the check against eager, and what the graphs did."""
    setup_s: float | None = _top()
    cudagraph_status: str = _top("n/a")
    correct: bool | None = _top()
    max_abs_err: float | None = _top()
    setup_calls_s: list[float] | None = _detail()
    compile: CompileCounters | None = _detail(read=_compile)
    cudagraph_reason: str | None = _detail()
    cudagraph_trees: TreeGraphs | None = _detail()
    rel_err: float | None = _detail()
    tolerance: float | None = _detail()
    correct_after_steps: int | None = _detail()
    rel_err_measure: str | None = _detail()  # what rel_err compares, where not outputs
    tf32_matmul: bool | None = _detail()
    tf32_conv: bool | None = _detail()
    after_error: str | None = _detail()


@dataclass
class Host:
    """Where the point ran and what happened to its process."""
    # placement and the host policy's gate (runner/core/placement.py, host_gate.py)
    placement: HostPlacement | None = _detail("host")
    clocks_before: Clocks | None = _detail(read=_clocks)
    clocks_after: Clocks | None = _detail(read=_clocks)
    rescued: bool | None = _detail()  # measured in a fresh process after a lost context
    cuda_context_lost: str | None = _detail()
    traceback: str | None = _detail()


@dataclass
class Trace:
    """One profiled step's timeline (contract/trace.py), or why none was kept."""
    timeline: TraceDoc | None = _top(key=TRACE_FIELD)
    error: str | None = _detail("trace_error")


@dataclass
class Source:
    """A published point's own notes (data/samples): where its figure comes from."""
    citation: str | None = _detail()
    url: str | None = _detail()
    statistic: str | None = _detail()
    stddev_ms: float | None = _detail()
    eager_reference_ms: float | None = _detail()
    note: str | None = _detail()


@dataclass
class EnergyRecord:
    """The energy windows' figures (contract/energy.py's Energy, flattened into the
    bundle's fields): all None with `unavailable_reason` where there is no counter, and
    all None with no reason in a point from before energy was measured."""
    energy_mj_per_step: float | None = _top()
    energy_mj_per_step_ci_low: float | None = _top()
    energy_mj_per_step_ci_high: float | None = _top()
    avg_power_w: float | None = _top()
    idle_power_w: float | None = _top()
    energy_above_idle_mj_per_step: float | None = _top()
    energy_gain: float | None = _top()
    energy_gain_ci_low: float | None = _top()
    energy_gain_ci_high: float | None = _top()
    unavailable_reason: str | None = _top(key="energy_unavailable_reason")
    counter: str | None = _detail("energy_counter")
    windows: list[EnergyWindow] | None = _detail("energy_windows", read=_windows)  # raw
    idle: IdlePower | NoIdle | None = _detail("energy_idle", read=_idle)

    def set(self, e: Energy, idle: IdlePower | NoIdle | None = None) -> None:
        """Fill from one mode's Energy (runner/core/energy.py's answer)."""
        for name in ENERGY_NUMBER_FIELDS:
            setattr(self, name, getattr(e, name))
        self.unavailable_reason, self.counter = e.unavailable_reason, e.counter
        self.windows = list(e.windows) or None
        self.idle = idle

    def get(self) -> Energy | None:
        """Back to an Energy; None for a point that says nothing about energy."""
        if self.unavailable_reason is None and self.energy_mj_per_step is None:
            return None
        return Energy(**{n: getattr(self, n) for n in ENERGY_NUMBER_FIELDS},
                      windows=tuple(self.windows or ()),
                      counter=self.counter, unavailable_reason=self.unavailable_reason)


@dataclass
class Split:
    """Host and GPU apart (contract/host_split.py fills it): the step's three parts
    and the speedup projected to reference launch costs ({"5": x, "10": y, "20": z}, us
    a launch)."""
    gpu_ms: float | None = _top(key="split_gpu_ms")
    launch_ms: float | None = _top(key="split_launch_ms")
    rest_ms: float | None = _top(key="split_rest_ms")
    speedup_at_launch_us: dict[str, float] | None = _detail()


_RECORDS = {"timing": Timing, "intervals": Intervals, "memory": Memory,
            "launches": Launches, "setup": Setup, "host": Host, "trace": Trace,
            "source": Source, "energy": EnergyRecord, "split": Split}


@dataclass
class Measurement:
    """One point. Build with Measurement(mode, batch_size); fill the sub-records."""
    mode: str
    batch_size: int
    status: str = "ok"
    message: str = ""
    timing: Timing = field(default_factory=Timing)
    intervals: Intervals = field(default_factory=Intervals)
    memory: Memory = field(default_factory=Memory)
    launches: Launches = field(default_factory=Launches)
    setup: Setup = field(default_factory=Setup)
    host: Host = field(default_factory=Host)
    trace: Trace = field(default_factory=Trace)
    split: Split = field(default_factory=Split)
    source: Source = field(default_factory=Source)
    energy: EnergyRecord = field(default_factory=EnergyRecord)
    # details keys this record does not declare (and declared ones stored as null)
    extra: JsonObject = field(default_factory=dict)
    # The details' key order as read (from_json): written back in it, so an imported
    # bundle exports as it came. Empty for a point the runner built: DETAILS_ORDER.
    read_order: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def set_details(self, values: Mapping[str, Any]) -> None:
        """Details as a JSON mapping (a mode's own figures): declared keys to their
        field, the others to `extra`."""
        for k, v in values.items():
            where, read = _DETAIL_KEYS.get(k), _READERS.get(k)
            typed = None if v is None or read is None else read(v)
            if where is not None:
                typed = v if read is None else typed
                setattr(getattr(self, where[0]), where[1], typed)
            if typed is None:
                self.extra[k] = v
            else:
                self.extra.pop(k, None)

    def details(self) -> JsonObject:
        """The `details` object as a bundle writes it: declared keys that are known (or
        kept as null) in DETAILS_ORDER, then the undeclared ones of `extra`; keys read
        from JSON first, in the order read."""
        out = {}
        for key in DETAILS_ORDER:
            rec, name = _DETAIL_KEYS[key]
            v = getattr(getattr(self, rec), name)
            if v is not None:
                out[key] = as_json(v)
            elif key in self.extra:
                out[key] = self.extra[key]
        for k, v in self.extra.items():
            out.setdefault(k, v)
        if not self.read_order:
            return out
        return {**{k: out[k] for k in self.read_order if k in out}, **out}

    def value(self, key: str) -> Any:
        """A top-level field by its bundle name ('step_ms', 'graph_pool_bytes', ...)."""
        rec, name = _TOP_KEYS[key]
        return getattr(getattr(self, rec), name)

    def to_json(self) -> JsonObject:
        """The bundle's measurement object: MEASUREMENT_FIELDS in order, then trace."""
        top = {"mode": self.mode, "batch_size": self.batch_size, "status": self.status,
               "message": self.message, "details": self.details()}
        for key, (rec, name) in _TOP_KEYS.items():
            top[key] = getattr(getattr(self, rec), name)
        return {f: top[f] for f in (*MEASUREMENT_FIELDS, TRACE_FIELD)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Measurement:
        """A bundle's (or a database row's) measurement object. Values are taken as they
        are (validate the bundle first); missing fields are unknown."""
        m = cls(mode=doc.get("mode"), batch_size=doc.get("batch_size"),  # type: ignore[arg-type]
                status=doc.get("status") or "ok", message=doc.get("message") or "")
        # Only the keys the document holds: a row of a dozen columns (the Runs board
        # reads 100,000 through here) does not walk all forty.
        for key in doc:
            found = _TOP_KEYS.get(key)
            if found is not None:
                setattr(getattr(m, found[0]), found[1], doc[key])
        if m.timing.samples_ms is None:  # null in older files: none
            m.timing.samples_ms = []
        if m.intervals.launch_us_rounds is None:
            m.intervals.launch_us_rounds = []
        if m.setup.cudagraph_status is None:
            m.setup.cudagraph_status = "n/a"
        details = doc.get("details") or {}
        if details:
            m.set_details(details)
            m.read_order = tuple(details)
        return m


def split(record: Any) -> tuple[JsonObject, JsonObject]:
    """A sub-record's JSON: (top-level fields, known details fields), by their keys."""
    top, details = {}, {}
    for f in dataclasses.fields(record):
        key, v = f.metadata["key"] or f.name, getattr(record, f.name)
        if f.metadata["where"] == TOP:
            top[key] = v
        elif v is not None:
            details[key] = v
    return top, details


def _keys(where: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for rec, cls in _RECORDS.items():
        for f in dataclasses.fields(cls):
            if f.metadata["where"] == where:
                key = f.metadata["key"] or f.name
                assert key not in out, f"JSON key {key!r} declared twice"
                out[key] = (rec, f.name)
    return out


# The order in which the runner writes a point's details (runner/core/point.py: build,
# prepare, the rounds, the profiled pass, clean-up; then the sweep and a rescue), so a
# bundle written through this record reads as one written before it; then the keys only
# published bundles hold.
DETAILS_ORDER = (
    "phase_s", "num_threads", "tf32_matmul", "tf32_conv", "clocks_before", "setup_calls_s",
    "cudagraph_trees", "correct_after_steps", "rel_err_measure", "rel_err", "tolerance",
    "compile", "warmup_steps", "iters_per_block", "m0", "m1", "m2",
    "device_used_delta_bytes", "leftover_private_pools_at_m0", "leftover_bytes_at_m0",
    "eager_reserved_delta_bytes", "memory_compile_cold", "memory_error", "separate_graphs",
    "after_error", "traceback", "processes", "round_process", "rounds", "rounds_s",
    "round_modes", "host_ms_per_step", "vs_compile", "target_half_width",
    "judged_half_width", "judged_on", "speedup_at_launch_us", "latency_ms_p10",
    "latency_ms_p90",
    "profiled_steps", "host_copies_per_step", "gpu_ops_per_step", "triton_kernels_per_step",
    "gpu_busy_union_ms", "trace_error", "clocks_after", "cudagraph_reason",
    "cuda_context_lost", "host", "point_wall_s", "rescued", "repeat_errors",
    "energy_counter", "energy_idle", "energy_windows",
    "citation", "stddev_ms", "statistic", "url", "eager_reference_ms", "note", "kernel_us",
    "per_kernel_us", "per_kernel_us_sync_each_kernel",
)
_TOP_KEYS = _keys(TOP)
_DETAIL_KEYS = _keys(DETAILS)
_READERS = {key: {f.name: f for f in dataclasses.fields(_RECORDS[rec])}[name].metadata["read"]
            for key, (rec, name) in _DETAIL_KEYS.items()}
assert set(_TOP_KEYS) == set(MEASUREMENT_FIELDS) - {
    "mode", "batch_size", "status", "message", "details"} | {TRACE_FIELD}
assert sorted(DETAILS_ORDER) == sorted(_DETAIL_KEYS), "DETAILS_ORDER misses a key"


def details_of(details: Any) -> Measurement:
    """The typed view of a stored point's details (a dict read from the database or a
    bundle; None or anything else reads as none): a Measurement whose figures outside
    details are unknown. Values are as stored: a reader still checks a value's type
    where an old or hand-written bundle may hold anything."""
    return Measurement.from_json({"details": details if isinstance(details, Mapping)
                                  else {}})

