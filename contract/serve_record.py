"""The `serve` section of a result bundle (format version 2): one serve run's figures.

Standard library only, like contract/bundle.py, which calls validate_section() when a
bundle carries the section. Unknown figures are None, never 0.

    "serve": {
      "batch_dist": "uniform:1-64", "requests": 500, "seed": 0,
      "strategies": ["eager", "buckets:8/16/32", ...],   # as asked, in order
      "stream": [50, 54, 6, ...],                        # batch size of each request
      "results": [{strategy figures, RESULT_FIELDS}, ...],
      "profile": [{PROFILE_FIELDS}, ...]                 # per candidate size, for the advisor
    }
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypedDict, cast

from contract.buckets import (
    ServeInputError,
    parse_distribution,
    parse_strategy,
)
from contract.energy import EnergyWindowJson
from contract.json_shape import as_json
from contract.limits import MAX_BATCH_SIZE, MAX_DIST_TEXT, MAX_REQUESTS
from contract.numbers import is_number
from contract.vocab import STRATEGY_KINDS

STATUSES = ("ok", "error", "unsupported")
# How a strategy's requests actually ran: graphs, or eager standing in for them (no CUDA).
EXECUTIONS = ("eager", "inductor", "cudagraph-trees", "cuda-graph", "eager-padded")

RESULT_NUMBER_FIELDS = (
    "requests", "real_rows", "latency_ms_mean", "latency_ms_p50", "latency_ms_p99",
    "requests_per_s", "rows_per_s", "padding_waste", "wasted_fraction", "hit_rate",
    "fallback_rate", "graphs", "graph_pool_bytes", "setup_s", "host_launches_per_request",
    "graph_launches_per_request", "max_abs_err",
)
RESULT_FIELDS = ("strategy", "kind", "buckets", "status", "message", "execution",
                 *RESULT_NUMBER_FIELDS, "correct", "latencies_ms", "details")
# Counts and bytes: whole numbers.
INTEGER_FIELDS = ("requests", "real_rows", "graphs", "graph_pool_bytes", "pool_bytes",
                  "pool_extra_bytes")
# Stored in 32-bit INTEGER columns (the rest of INTEGER_FIELDS are 64-bit).
INT32_FIELDS = ("requests", "graphs")
PROFILE_NUMBER_FIELDS = ("bucket_ms", "eager_ms", "pool_bytes", "pool_extra_bytes",
                         "capture_s")
PROFILE_FIELDS = ("batch_size", *PROFILE_NUMBER_FIELDS, "execution")
CONFIG_FIELDS = ("batch_dist", "requests", "seed", "strategies", "stream")
SECTION_FIELDS = (*CONFIG_FIELDS, "results", "profile")


class SectionError(ValueError):
    """A serve section that does not follow the format; bundle.py re-raises it as a
    BundleError (this module cannot import that one: bundle.py imports this module)."""


class ServeEnergy(TypedDict, total=False):
    """A result's details["energy"] (issue 28; runner/serve/scenario.py): energy per
    request over windows of the stream's requests, or only why there is none."""
    energy_mj_per_request: float | None
    energy_mj_per_request_ci_low: float | None
    energy_mj_per_request_ci_high: float | None
    avg_power_w: float | None
    counter: str | None
    windows: list[EnergyWindowJson]
    unavailable_reason: str | None


class ServeProfileCounts(TypedDict, total=False):
    """A result's details["profile"]: the profiled requests' counts beyond the two per
    request (contract/measurement.py Launches' top-level fields), and its known
    details fields (all figures) under "details"."""
    gpu_kernels_per_step: float | None
    gpu_busy_ms: float | None
    details: dict[str, float]


class ServeDetails(TypedDict, total=False):
    """A result's details as the replay writes them (runner/serve/scenario.py). What an
    older or hand-written bundle holds instead is kept as it came: nothing here is
    required."""
    capture_order: list[int]  # buckets: the sizes captured, largest first
    pool_bytes_by_bucket: dict[str, int]  # keyed by the size as text (a JSON key)
    capture_s_by_bucket: dict[str, float]
    note: str  # what the replay noted: no CUDA, say
    replay_wall_s: float
    compiles_in_setup: int
    compiles_in_replay: int
    cudagraph_skips: int
    energy: ServeEnergy
    graphs_recorded_in_replay: int
    # m0, m1, m2: contract/measurement.py MemorySnapshot's fields
    memory: dict[str, dict[str, int | list[int]]]
    device_used_delta_bytes: int
    pool_bytes_per_graph: float
    profile: ServeProfileCounts


class ServeResultJson(TypedDict):
    """A serve section's result: ServeResult's fields (RESULT_FIELDS), in order."""
    strategy: str
    kind: str
    buckets: list[int]
    status: str
    message: str
    execution: str | None
    requests: int | None
    real_rows: int | None
    latency_ms_mean: float | None
    latency_ms_p50: float | None
    latency_ms_p99: float | None
    requests_per_s: float | None
    rows_per_s: float | None
    padding_waste: float | None
    wasted_fraction: float | None
    hit_rate: float | None
    fallback_rate: float | None
    graphs: int | None
    graph_pool_bytes: int | None
    setup_s: float | None
    host_launches_per_request: float | None
    graph_launches_per_request: float | None
    max_abs_err: float | None
    correct: bool | None
    latencies_ms: list[float]
    details: ServeDetails


class ServeProfileJson(TypedDict):
    """A serve section's profile point: ServeProfilePoint's fields (PROFILE_FIELDS)."""
    batch_size: int
    bucket_ms: float | None
    eager_ms: float | None
    pool_bytes: int | None
    pool_extra_bytes: int | None
    capture_s: float | None
    execution: str | None


class ServeSectionJson(TypedDict):
    """The bundle's `serve` section (SECTION_FIELDS, in order; the module docstring)."""
    batch_dist: str
    requests: int
    seed: int
    strategies: list[str]
    stream: list[int]
    results: list[ServeResultJson]
    profile: list[ServeProfileJson]


@dataclass(frozen=True)
class ServeConfig:
    """What a serve run replays: the distribution, its seed and the stream drawn from it,
    and the strategies asked for, in order (the serve_configs table's row)."""
    batch_dist: str
    requests: int
    seed: int
    strategies: list[str]
    stream: list[int]


@dataclass(frozen=True)
class ServeResult:
    """One strategy's figures (RESULT_FIELDS, in order). `details` stays the JSON its
    column holds: the replay's own notes (ServeDetails: capture order, memory snapshots,
    the profiler's counts), as they came; the keys a reader needs have a property here."""
    strategy: str
    kind: str
    buckets: list[int] = field(default_factory=list)
    status: str = "ok"
    message: str = ""
    execution: str | None = None
    requests: int | None = None
    real_rows: int | None = None
    latency_ms_mean: float | None = None
    latency_ms_p50: float | None = None
    latency_ms_p99: float | None = None
    requests_per_s: float | None = None
    rows_per_s: float | None = None
    padding_waste: float | None = None
    wasted_fraction: float | None = None
    hit_rate: float | None = None
    fallback_rate: float | None = None
    graphs: int | None = None
    graph_pool_bytes: int | None = None
    setup_s: float | None = None
    host_launches_per_request: float | None = None
    graph_launches_per_request: float | None = None
    max_abs_err: float | None = None
    correct: bool | None = None
    latencies_ms: list[float] = field(default_factory=list)
    details: ServeDetails = field(default_factory=ServeDetails)

    @classmethod
    def empty(cls, strategy: str, **figures: Any) -> ServeResult:
        """A strategy's result with every figure unknown but those given (validate_result
        checks it where it enters the bundle or the database)."""
        s = parse_strategy(strategy)
        return cls(strategy=s.name, kind=s.kind, buckets=list(s.buckets), **figures)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ServeResult:
        """From a serve section's result (checked) or a row's fields."""
        values: dict[str, Any] = {f: doc.get(f) for f in RESULT_FIELDS}
        values.update(buckets=list(doc.get("buckets") or []),
                      message=doc.get("message") or "",
                      latencies_ms=list(doc.get("latencies_ms") or []),
                      details=doc.get("details") or {})
        return cls(**values)

    @property
    def energy_mj_per_request(self) -> float | None:
        """Energy per request (mJ) from details["energy"] (issue 28); None where not
        measured (a CPU run, no counter, an older run)."""
        e = self.details.get("energy")
        v = e.get("energy_mj_per_request") if isinstance(e, Mapping) else None
        return float(v) if v is not None and is_number(v) else None

    @property
    def note(self) -> str:
        """What the replay noted of the strategy (details["note"]: no CUDA, say)."""
        return str(self.details.get("note") or "")


@dataclass(frozen=True)
class ServeProfilePoint:
    """One candidate bucket size of the advisor's profile (PROFILE_FIELDS, in order)."""
    batch_size: int
    bucket_ms: float | None = None
    eager_ms: float | None = None
    pool_bytes: int | None = None
    pool_extra_bytes: int | None = None
    capture_s: float | None = None
    execution: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ServeProfilePoint:
        values: dict[str, Any] = {f: doc.get(f) for f in PROFILE_FIELDS}
        return cls(**values)


@dataclass(frozen=True)
class ServeSection:
    """A serve run whole: what it replays, each strategy's result, the profile."""
    config: ServeConfig
    results: list[ServeResult] = field(default_factory=list)
    profile: list[ServeProfilePoint] = field(default_factory=list)

    def to_json(self) -> ServeSectionJson:
        """The bundle's `serve` section (SECTION_FIELDS, in order)."""
        return cast(ServeSectionJson, {**as_json(self.config),
                                       "results": as_json(self.results),
                                       "profile": as_json(self.profile)})

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ServeSection:
        """From a checked section (validate_section)."""
        return cls(ServeConfig(**{f: doc[f] for f in CONFIG_FIELDS}),
                   [ServeResult.from_json(r) for r in doc["results"]],
                   [ServeProfilePoint.from_json(p) for p in doc.get("profile") or []])


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def validate_section(sec: Any) -> ServeSectionJson:
    """Check a serve section; return it normalised or raise SectionError naming the value."""
    if not isinstance(sec, dict):
        raise SectionError(f"serve must be an object, got {type(sec).__name__}")
    try:
        parse_distribution(str(sec.get("batch_dist") or ""), allow_files=False)
    except ServeInputError:
        # A file distribution is recorded by its path, which need not exist here.
        if not isinstance(sec.get("batch_dist"), str) or not sec["batch_dist"].strip():
            raise SectionError(f"serve.batch_dist {sec.get('batch_dist')!r} must be a "
                               "distribution (e.g. uniform:1-64)") from None
    if len(str(sec.get("batch_dist"))) > MAX_DIST_TEXT:
        raise SectionError(f"serve.batch_dist is longer than {MAX_DIST_TEXT} characters "
                           "(the database column)")
    if not _int(sec.get("requests"), 1, MAX_REQUESTS):
        raise SectionError(f"serve.requests {sec.get('requests')!r} must be an integer "
                           f"from 1 to {MAX_REQUESTS}")
    if not _int(sec.get("seed"), -(2**63), 2**63 - 1):
        raise SectionError(f"serve.seed {sec.get('seed')!r} must be an integer")
    stream = sec.get("stream")
    if (not isinstance(stream, list) or len(stream) != sec["requests"]
            or not all(_int(b, 1, MAX_BATCH_SIZE) for b in stream)):
        raise SectionError(f"serve.stream must list {sec['requests']} batch sizes "
                           f"(integers 1 to {MAX_BATCH_SIZE})")
    names = sec.get("strategies")
    if not isinstance(names, list) or not names:
        raise SectionError("serve.strategies must be a non-empty list")
    for n in names:
        try:
            parse_strategy(str(n))
        except ServeInputError as e:
            raise SectionError(f"serve.strategies: {e}") from None
    results = sec.get("results")
    if not isinstance(results, list):
        raise SectionError("serve.results must be a list")
    seen: set[str] = set()
    for i, r in enumerate(results):
        validate_result(r, len(stream), f"serve.results[{i}]")
        if r["strategy"] in seen:
            raise SectionError(f"serve.results[{i}]: duplicate strategy {r['strategy']!r}")
        seen.add(r["strategy"])
    profile = sec.get("profile") or []
    if not isinstance(profile, list):
        raise SectionError("serve.profile must be a list")
    sizes: set[int] = set()
    for i, p in enumerate(profile):
        validate_profile_point(p, f"serve.profile[{i}]")
        if p["batch_size"] in sizes:
            raise SectionError(f"serve.profile[{i}]: duplicate batch_size {p['batch_size']}")
        sizes.add(p["batch_size"])
    config: dict[str, Any] = {f: sec.get(f) for f in CONFIG_FIELDS}
    return ServeSection(ServeConfig(**config),
                        [ServeResult.from_json(r) for r in results],
                        [ServeProfilePoint.from_json(p) for p in profile]).to_json()


def validate_result(r: Any, requests: int, where: str = "serve result") -> None:
    """One strategy's figures; raises SectionError naming the bad value."""
    if not isinstance(r, dict):
        raise SectionError(f"{where}: expected an object, got {type(r).__name__}")
    try:
        s = parse_strategy(str(r.get("strategy")))
    except ServeInputError as e:
        raise SectionError(f"{where}: {e}") from None
    if r.get("buckets") is not None and not isinstance(r["buckets"], list):
        raise SectionError(f"{where}: buckets must be a list")
    if r.get("kind") != s.kind or list(r.get("buckets") or []) != list(s.buckets):
        raise SectionError(f"{where}: kind/buckets do not match strategy {s.name!r}")
    if r.get("kind") not in STRATEGY_KINDS:
        raise SectionError(f"{where}: kind {r.get('kind')!r} is unknown")
    if r.get("status") not in STATUSES:
        raise SectionError(f"{where}: status {r.get('status')!r} is not one of "
                           f"{', '.join(STATUSES)}")
    if r.get("execution") is not None and r["execution"] not in EXECUTIONS:
        raise SectionError(f"{where}: execution {r['execution']!r} is not one of "
                           f"{', '.join(EXECUTIONS)}")
    for f in RESULT_NUMBER_FIELDS:
        v = r.get(f)
        if v is not None and (not is_number(v) or v < 0):
            raise SectionError(f"{where}: {f} {v!r} must be a non-negative finite number")
        if v is not None and f in INTEGER_FIELDS and not isinstance(v, int):
            raise SectionError(f"{where}: {f} {v!r} must be a whole number")
        if v is not None and f in INT32_FIELDS and v > 2**31 - 1:
            raise SectionError(f"{where}: {f} {v!r} is more than {2**31 - 1}")
    if r.get("correct") not in (None, True, False):
        raise SectionError(f"{where}: correct {r.get('correct')!r} must be true, false or null")
    lat = r.get("latencies_ms") or []
    if not isinstance(lat, list) or not all(is_number(v) and v >= 0 for v in lat):
        raise SectionError(f"{where}: latencies_ms must be a list of non-negative numbers")
    if lat and len(lat) != requests:
        raise SectionError(f"{where}: latencies_ms has {len(lat)} entries for {requests} "
                           "requests")
    if r.get("details") is not None and not isinstance(r["details"], dict):
        raise SectionError(f"{where}: details must be an object")


def validate_profile_point(p: Any, where: str = "serve profile point") -> None:
    if not isinstance(p, dict):
        raise SectionError(f"{where}: expected an object, got {type(p).__name__}")
    if not _int(p.get("batch_size"), 1, MAX_BATCH_SIZE):
        raise SectionError(f"{where}: batch_size {p.get('batch_size')!r} must be an integer "
                           f"from 1 to {MAX_BATCH_SIZE}")
    for f in PROFILE_NUMBER_FIELDS:
        v = p.get(f)
        if v is not None and (not is_number(v) or v < 0):
            raise SectionError(f"{where}: {f} {v!r} must be a non-negative finite number")
        if v is not None and f in INTEGER_FIELDS and not isinstance(v, int):
            raise SectionError(f"{where}: {f} {v!r} must be a whole number")
    if p.get("execution") is not None and p["execution"] not in EXECUTIONS:
        raise SectionError(f"{where}: execution {p['execution']!r} is not one of "
                           f"{', '.join(EXECUTIONS)}")


# The records' fields are the section's keys, in its order: as_json writes them so.
assert tuple(f.name for f in fields(ServeResult)) == RESULT_FIELDS
assert tuple(f.name for f in fields(ServeProfilePoint)) == PROFILE_FIELDS
assert tuple(f.name for f in fields(ServeConfig)) == CONFIG_FIELDS
# The JSON shapes written out above follow the same lists.
assert tuple(ServeResultJson.__annotations__) == RESULT_FIELDS
assert tuple(ServeProfileJson.__annotations__) == PROFILE_FIELDS
assert tuple(ServeSectionJson.__annotations__) == SECTION_FIELDS
