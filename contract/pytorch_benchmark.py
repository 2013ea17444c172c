"""A sweep's points as the records of PyTorch's OSS benchmark database (the table
`benchmark.oss_ci_benchmark_v3` behind the PyTorch HUD's benchmark dashboards), so other
tools read launchbench's results. `python -m runner export --format pytorch-benchmark`
writes them; docs/ARCHITECTURE.md, "Results other tools read", says how each field is
filled.

The format, from its documented sources (read 2026-12; quoted by name, not copied):

- pytorch/test-infra, clickhouse_db_schema/oss_ci_benchmark_v3/schema.sql: the table's
  columns. A record is `benchmark` (name, mode: training or inference, dtype,
  extra_info), `model` (name, type, backend, origins, extra_info), `inputs`, `runners`
  (a list: name, type, cpu_info, cpu_count, mem_info, avail_mem_in_gb, gpu_info,
  gpu_count, gpu_mem_info, avail_gpu_mem_in_gb, extra_info), `dependencies` (a map of
  name to repo, branch, sha, version, extra_info) and `metric` (name,
  benchmark_values: an array of floats, target_value: a float, extra_info). Every
  extra_info is Map(String, String): text values only. The counts are UInt32.
- pytorch/test-infra, .github/scripts/upload_benchmark_results.py: the uploader reads a
  JSON list of such records (or one per line), skips any without `metric`, and adds the
  CI job's metadata (timestamp, repo, head_sha, workflow and job ids), filling `runners`
  and `dependencies` from the job only where a record has none.
- the pytorch/pytorch wiki, "PyTorch OSS benchmark infra", "Benchmark results format":
  "All fields are optional unless specified as required"; benchmark.name and model.name
  are required, and so (the schema has no record without them) metric.name and
  metric.benchmark_values.

One record per point (a mode at a batch size) and metric: the step time of every point
that has one, its speedup over eager where the point has one, and its memory cost over
eager where it was measured (bundle version 7; contract/memory.py). A point without a step
time (unsupported, error, skipped, or a published figure that is not a step time) has
no figure to give and is left out, and `left_out` says which and why: a record with
no value would read as a zero on a dashboard. Unknown fields are left out, never
written as 0 (the table's default stands in). Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from contract import memory
from contract.measurement import Measurement
from contract.vocab import BASELINE_MODE

BENCHMARK_NAME = "launchbench"
STEP_METRIC = "step_time(ms)"  # the wiki's advice: the unit in the metric's name
SPEEDUP_METRIC = "speedup_over_eager(x)"
MEMORY_METRIC = "memory_cost_over_eager(MiB)"  # contract/memory.py's one memory figure
MIB = 1024 ** 2
# The workloads that time a training step; every other one times inference.
TRAINING_WORKLOADS = ("train-step",)
GIB = 1024 ** 3


class Benchmark(TypedDict, total=False):
    name: str
    mode: str  # training or inference
    dtype: str
    extra_info: dict[str, str]


class Model(TypedDict):
    name: str
    type: str
    backend: str
    origins: list[str]
    extra_info: dict[str, str]


class Runner(TypedDict, total=False):  # only what the run's environment knows
    name: str
    type: str
    cpu_info: str
    gpu_info: str
    gpu_count: int
    avail_gpu_mem_in_gb: int
    extra_info: dict[str, str]


class Dependency(TypedDict):
    repo: str
    version: str


class Metric(TypedDict):
    name: str
    benchmark_values: list[float]
    extra_info: dict[str, str]


class Record(TypedDict):
    """One row of oss_ci_benchmark_v3, as the uploader reads it."""
    benchmark: Benchmark
    model: Model
    runners: list[Runner]
    dependencies: dict[str, Dependency]
    metric: Metric


class ExportError(ValueError):
    """A run the format cannot hold (a serve or graph-memory run). str() is one line."""


@dataclass(frozen=True)
class LeftOut:
    """A point that gave no record, and why."""
    mode: str
    batch_size: int
    reason: str

    def __str__(self) -> str:
        return f"{self.mode} batch {self.batch_size}: {self.reason}"


@dataclass(frozen=True)
class Export:
    records: list[Record]
    left_out: list[LeftOut]


def _text(v: Any) -> str:
    """A value for a Map(String, String): text as it is, anything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _texts(pairs: Mapping[str, Any]) -> dict[str, str]:
    return {k: _text(v) for k, v in pairs.items() if v is not None}


def _known(pairs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pairs.items() if v is not None}


def _runner(env: Mapping[str, Any]) -> Runner:
    gpu_bytes = env.get("gpu_memory_bytes")
    return cast(Runner, _known({
        "name": env.get("hostname"),
        # the runner's kind, as the HUD groups runners: the GPU, or "cpu" without one
        "type": env.get("gpu_name") or env.get("device"),
        "cpu_info": env.get("cpu_model"),
        "gpu_info": env.get("gpu_name"),
        "gpu_count": env.get("gpu_count"),
        "avail_gpu_mem_in_gb": gpu_bytes // GIB if isinstance(gpu_bytes, int) else None,
        "extra_info": _texts({"device": env.get("device"),
                              "driver_version": env.get("driver_version"),
                              "cuda_version": env.get("cuda_version"),
                              "python_version": env.get("python_version")}),
    }))


def _dependencies(env: Mapping[str, Any]) -> dict[str, Dependency]:
    deps: dict[str, Dependency] = {}
    if env.get("torch_version"):
        deps["torch"] = {"repo": "pytorch/pytorch", "version": env["torch_version"]}
    if env.get("triton_version"):
        deps["triton"] = {"repo": "triton-lang/triton", "version": env["triton_version"]}
    return deps


def _why_no_record(m: Measurement) -> str | None:
    if m.status != "ok":
        # the message's first line: the command says each on one line
        first = m.message.strip().splitlines()[0][:200] if m.message.strip() else ""
        return f"status {m.status}" + (f" ({first})" if first else "")
    if m.timing.step_ms is None:
        return "no step time"
    return None


def _point_records(m: Measurement, head: dict[str, Any]) -> list[Record]:
    """A point's records: its step time, then its speedup where it has one; `head`
    holds what they share (all but the metric)."""
    out = [cast(Record, {**head, "metric": {
        "name": STEP_METRIC,
        # The one figure the runner reports (the median over its rounds); the rounds
        # themselves stay in the bundle.
        "benchmark_values": [float(m.timing.step_ms or 0)],
        "extra_info": _texts({
            "statistic": "median over rounds" if m.intervals.rounds else "median",
            "ci95_low": m.intervals.step_ms_ci_low,
            "ci95_high": m.intervals.step_ms_ci_high,
            "p10": m.timing.step_ms_p10, "p90": m.timing.step_ms_p90,
            "rounds": m.intervals.rounds, "processes": m.intervals.processes,
            "noisy": m.timing.noisy, "host_unstable": m.intervals.host_unstable,
            "correct": m.setup.correct}),
    }})]
    if m.mode != BASELINE_MODE and m.intervals.speedup is not None:
        out.append(cast(Record, {**head, "metric": {
            "name": SPEEDUP_METRIC,
            "benchmark_values": [float(m.intervals.speedup)],
            "extra_info": _texts({
                "statistic": "median of per-round paired ratios eager / mode",
                "ci95_low": m.intervals.speedup_ci_low,
                "ci95_high": m.intervals.speedup_ci_high,
                "noisy": m.timing.noisy}),
        }}))
    cost = memory.cost_of(m)
    if cost is not None and cost.cost_bytes is not None and m.mode != BASELINE_MODE:
        out.append(cast(Record, {**head, "metric": {
            "name": MEMORY_METRIC,
            "benchmark_values": [cost.cost_bytes / MIB],
            "extra_info": _texts({
                "definition": memory.MEMORY_COST_LABEL + ", each mode measured alone",
                "kept_mib": None if cost.kept_bytes is None else cost.kept_bytes / MIB,
                "graph_pool_mib": None if cost.pool_bytes is None else cost.pool_bytes / MIB,
                "eager_kept_mib": None if cost.eager_bytes is None
                else cost.eager_bytes / MIB}),
        }}))
    return out


def records(bundle: Mapping[str, Any]) -> Export:
    """The records of a validated bundle (contract/bundle.py's Bundle) of a sweep:
    per point with a step time, its step-time record, then its speedup record where it
    has a speedup. ExportError for a run that holds no points of that kind."""
    run, env = bundle["run"], bundle["environment"]
    kind = run.get("kind") or "sweep"
    if kind != "sweep":
        raise ExportError(f"run {run['uuid']!r} is a {kind} run: the pytorch-benchmark "
                          "format holds a sweep's points only")
    params = run.get("workload_params") or {}
    benchmark = Benchmark(
        name=BENCHMARK_NAME,
        mode="training" if run["workload"] in TRAINING_WORKLOADS else "inference",
        **_known({"dtype": run.get("dtype")}))  # type: ignore[typeddict-item]
    shared_info = _texts({"run_uuid": run["uuid"], "created_at": run.get("created_at"),
                          "source": run.get("source"), "label": run.get("label"),
                          "command": run.get("command"),
                          "workload_params": params or None})
    runners = [_runner(env)]
    dependencies = _dependencies(env)
    out: list[Record] = []
    left_out: list[LeftOut] = []
    for doc in bundle["measurements"]:
        m = Measurement.from_json(doc)
        why = _why_no_record(m)
        if why is not None:
            left_out.append(LeftOut(m.mode, m.batch_size, why))
            continue
        # What a point's records share: all but the metric.
        head: dict[str, Any] = {"benchmark": {**benchmark, "extra_info": {
                    **shared_info, "batch_size": str(m.batch_size)}},
                # the way the step runs (the mode), as the HUD names a compiler backend
                "model": Model(name=run["workload"], type="launchbench workload",
                               backend=m.mode, origins=[BENCHMARK_NAME],
                               extra_info=_texts({"workload_params": params or None})),
                "runners": runners, "dependencies": dependencies}
        out += _point_records(m, head)
    return Export(out, left_out)


def dumps(export: Export) -> str:
    """The file the uploader reads: one JSON list of records."""
    return json.dumps(export.records, indent=1, allow_nan=False) + "\n"
