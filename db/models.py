"""SQLAlchemy 2 typed models: environments, runs, measurements, traces, the job queue,
serve and graph-memory runs.

Naming rule (one name per thing): a table model is named after its row, `...Row`
(RunRow, MeasurementRow, TraceRow, JobRow, WorkerRow...); the typed record of the same
thing keeps the plain noun and lives in contract/ (Measurement and Trace in
measurement.py, Job and Worker in queue.py). Code that holds both says which it means
by the name alone, never by an import alias. The Python names only: the tables and
columns keep their names (`runs`, `measurements`...), so no migration follows from them.

The vocabularies (modes, statuses) come from contract/ (vocab.py, limits.py), the one place
that defines the result format; CHECK constraints make the database refuse anything outside them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from contract import graph_memory, serve_record
from contract.json_shape import JsonObject
from contract.limits import (
    ENVIRONMENT_TEXT_LIMITS,
    MAX_DIST_TEXT,
    MAX_LABEL,
    RUN_TEXT_LIMITS,
)
from contract.vocab import (
    CUDAGRAPH_STATUSES,
    HOST_POLICIES,
    JOB_DEVICES,
    JOB_EXECUTORS,
    MODES,
    POINT_STATUSES,
    RUN_KINDS,
    RUN_STATUSES,
    SOURCES,
    STOP_REASONS,
    STRATEGY_KINDS,
)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


class UtcDateTime(TypeDecorator[datetime]):
    """A moment, stored in UTC on SQLite and PostgreSQL alike and read back as an aware
    UTC datetime (issue 48, item 5). SQLite keeps a datetime as text without its offset:
    a bundle's 17:07:09+05:00 was stored as 17:07:09 and read back as UTC, five hours
    off, and importing the file again became a conflict. PostgreSQL's timestamptz keeps
    the instant but hands it back in the server's zone. Converted here, on the way in
    and out, so every writer and reader of db/ sees the same instant. A naive datetime
    means UTC, as everywhere in launchbench. The column stays DateTime(timezone=True):
    no migration."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        utc = (value if value.tzinfo else value.replace(tzinfo=timezone.utc)
               ).astimezone(timezone.utc)
        # SQLite's DateTime writes the wall clock it is given: hand it UTC's.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: Any, dialect: Any) -> datetime | None:
        if value is None:
            return None
        moment: datetime = value
        return (moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None
                else moment.astimezone(timezone.utc))


def _env_text(field: str) -> Any:
    return mapped_column(String(ENVIRONMENT_TEXT_LIMITS[field]))


class Base(DeclarativeBase):
    type_annotation_map = {JsonObject: JSON, list[float]: JSON}


class EnvironmentRow(Base):
    """Where a run was measured. `key` hashes every field, so identical hosts share a row;
    `gpu_name` + `torch_version` is what the dashboard groups and compares by."""

    __tablename__ = "environments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    device: Mapped[str] = mapped_column(String(8))
    gpu_name: Mapped[str | None] = _env_text("gpu_name")
    gpu_count: Mapped[int | None] = mapped_column(Integer)
    sm_count: Mapped[int | None] = mapped_column(Integer)
    gpu_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    driver_version: Mapped[str | None] = _env_text("driver_version")
    cuda_version: Mapped[str | None] = _env_text("cuda_version")
    torch_version: Mapped[str | None] = _env_text("torch_version")
    triton_version: Mapped[str | None] = _env_text("triton_version")
    python_version: Mapped[str | None] = _env_text("python_version")
    hostname: Mapped[str | None] = _env_text("hostname")
    cpu_model: Mapped[str | None] = _env_text("cpu_model")
    __table_args__ = (CheckConstraint("device IN ('cuda', 'cpu')", name="ck_env_device"),)


class RunRow(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(RUN_TEXT_LIMITS["uuid"]), unique=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    workload: Mapped[str] = mapped_column(String(RUN_TEXT_LIMITS["workload"]))
    workload_params: Mapped[JsonObject] = mapped_column(default=dict)
    dtype: Mapped[str | None] = mapped_column(String(RUN_TEXT_LIMITS["dtype"]))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    status: Mapped[str] = mapped_column(String(16))
    label: Mapped[str | None] = mapped_column(String(MAX_LABEL))
    source: Mapped[str] = mapped_column(String(16), default="measured")
    command: Mapped[str | None] = mapped_column(Text)
    # What the run measured: a sweep (measurements), a serve replay (serve_* tables) or a
    # graph-memory series (graph_memory_captures).
    kind: Mapped[str] = mapped_column(String(16), default="sweep", server_default="sweep")
    # Set while the run is being written (db/store.py heartbeat_run); a running run whose
    # heartbeat is older than limits.LOST_AFTER_S reads as lost (db/liveness.py).
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime())

    environment: Mapped[EnvironmentRow] = relationship()
    measurements: Mapped[list[MeasurementRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="MeasurementRow.id")

    __table_args__ = (
        CheckConstraint(_one_of("status", RUN_STATUSES), name="ck_run_status"),
        CheckConstraint(_one_of("source", SOURCES), name="ck_run_source"),
        CheckConstraint(_one_of("kind", RUN_KINDS), name="ck_run_kind"),
        Index("ix_runs_created_at", "created_at"),
        Index("ix_runs_environment_id", "environment_id"),
    )


class MeasurementRow(Base):
    """One (mode, batch size) point. Raw samples are kept beside the derived median."""

    __tablename__ = "measurements"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(32))
    batch_size: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text, default="")
    step_ms: Mapped[float | None] = mapped_column(Float)
    step_ms_p10: Mapped[float | None] = mapped_column(Float)
    step_ms_p90: Mapped[float | None] = mapped_column(Float)
    samples: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    setup_s: Mapped[float | None] = mapped_column(Float)
    host_launches_per_step: Mapped[float | None] = mapped_column(Float)
    graph_launches_per_step: Mapped[float | None] = mapped_column(Float)
    gpu_kernels_per_step: Mapped[float | None] = mapped_column(Float)
    gpu_busy_ms: Mapped[float | None] = mapped_column(Float)
    graph_pool_bytes: Mapped[int | None] = mapped_column(BigInteger)
    peak_allocated_bytes: Mapped[int | None] = mapped_column(BigInteger)
    reserved_delta_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # What the mode keeps beyond eager, measured alone (bundle version 7); null before.
    memory_cost_bytes: Mapped[int | None] = mapped_column(BigInteger)
    cudagraph_status: Mapped[str] = mapped_column(String(16), default="n/a")
    correct: Mapped[bool | None] = mapped_column(Boolean)
    max_abs_err: Mapped[float | None] = mapped_column(Float)
    # Intervals over interleaved rounds (bundle version 3); null for older runs.
    step_ms_ci_low: Mapped[float | None] = mapped_column(Float)
    step_ms_ci_high: Mapped[float | None] = mapped_column(Float)
    speedup: Mapped[float | None] = mapped_column(Float)
    speedup_ci_low: Mapped[float | None] = mapped_column(Float)
    speedup_ci_high: Mapped[float | None] = mapped_column(Float)
    launch_us: Mapped[float | None] = mapped_column(Float)
    stop_reason: Mapped[str | None] = mapped_column(String(16))
    noisy: Mapped[bool | None] = mapped_column(Boolean)
    host_unstable: Mapped[bool | None] = mapped_column(Boolean)
    # Energy from the GPU's counter (bundle version 5, migration 0009_energy); null for
    # older runs, and with energy_unavailable_reason saying why where there was no counter.
    energy_mj_per_step: Mapped[float | None] = mapped_column(Float)
    energy_mj_per_step_ci_low: Mapped[float | None] = mapped_column(Float)
    energy_mj_per_step_ci_high: Mapped[float | None] = mapped_column(Float)
    avg_power_w: Mapped[float | None] = mapped_column(Float)
    idle_power_w: Mapped[float | None] = mapped_column(Float)
    energy_above_idle_mj_per_step: Mapped[float | None] = mapped_column(Float)
    energy_gain: Mapped[float | None] = mapped_column(Float)
    energy_gain_ci_low: Mapped[float | None] = mapped_column(Float)
    energy_gain_ci_high: Mapped[float | None] = mapped_column(Float)
    energy_unavailable_reason: Mapped[str | None] = mapped_column(Text)
    # The step split into GPU busy, launch cost and the rest (bundle version 6, migration
    # 0011_host_split; contract/host_split.py): null for older runs and CPU points.
    split_gpu_ms: Mapped[float | None] = mapped_column(Float)
    split_launch_ms: Mapped[float | None] = mapped_column(Float)
    split_rest_ms: Mapped[float | None] = mapped_column(Float)
    samples_ms: Mapped[list[float]] = mapped_column(default=list)
    launch_us_rounds: Mapped[list[float]] = mapped_column(default=list)
    details: Mapped[JsonObject] = mapped_column(default=dict)

    run: Mapped[RunRow] = relationship(back_populates="measurements")
    trace_row: Mapped[TraceRow | None] = relationship(cascade="all, delete-orphan",
                                                      lazy="select")

    __table_args__ = (
        UniqueConstraint("run_id", "mode", "batch_size", name="uq_measurement_point"),
        CheckConstraint(_one_of("mode", MODES), name="ck_measurement_mode"),
        CheckConstraint(_one_of("status", POINT_STATUSES), name="ck_measurement_status"),
        CheckConstraint(_one_of("cudagraph_status", CUDAGRAPH_STATUSES),
                        name="ck_measurement_cudagraph_status"),
        CheckConstraint("batch_size >= 1", name="ck_measurement_batch_size"),
        CheckConstraint("step_ms IS NULL OR step_ms >= 0", name="ck_measurement_step_ms"),
        CheckConstraint("stop_reason IS NULL OR " + _one_of("stop_reason", STOP_REASONS),
                        name="ck_measurement_stop_reason"),
    )


class TraceRow(Base):
    """One profiled step of a point (contract/trace.py), in a table of its own: the
    pages read a run's points often and its timelines only for the batch size shown."""

    __tablename__ = "traces"
    measurement_id: Mapped[int] = mapped_column(
        ForeignKey("measurements.id", ondelete="CASCADE"), primary_key=True)
    trace: Mapped[JsonObject] = mapped_column(default=dict)


# --- The job queue (issue 4): sweeps queued from the dashboard or `enqueue`, claimed by
# workers. A job's spec is exactly what `sweep`'s flags say, kept as JSON.

class JobRow(Base):
    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    spec: Mapped[JsonObject] = mapped_column(default=dict)
    # Copied out of spec because claiming filters on them in SQL.
    device: Mapped[str] = mapped_column(String(8), default="auto")
    target: Mapped[str | None] = mapped_column(String(MAX_LABEL))
    label: Mapped[str | None] = mapped_column(String(MAX_LABEL))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    worker_id: Mapped[int | None] = mapped_column(ForeignKey("workers.id", ondelete="SET NULL"))
    worker_name: Mapped[str | None] = mapped_column(String(200))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    points_done: Mapped[int] = mapped_column(Integer, default=0)
    points_total: Mapped[int | None] = mapped_column(Integer)
    current_point: Mapped[str | None] = mapped_column(String(100))
    message: Mapped[str] = mapped_column(Text, default="")
    executor: Mapped[str] = mapped_column(String(8), default="local", server_default="local")
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    slurm_job_id: Mapped[str | None] = mapped_column(String(32))
    # The dashboard session that queued it (None from the CLI): the per-session cap.
    session: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (
        # A job ends with the status of the run it produced.
        CheckConstraint(_one_of("status", RUN_STATUSES), name="ck_job_status"),
        CheckConstraint(_one_of("device", JOB_DEVICES), name="ck_job_device"),
        CheckConstraint(_one_of("executor", JOB_EXECUTORS), name="ck_job_executor"),
        Index("ix_jobs_status", "status", "id"),
        Index("ix_jobs_session", "session", "status"),
    )


class WorkerRow(Base):
    """One worker process. A fresh row per start; rows whose heartbeat is old are dead."""

    __tablename__ = "workers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    hostname: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None] = mapped_column(Integer)
    gpu_name: Mapped[str | None] = mapped_column(String(200))
    has_cuda: Mapped[bool] = mapped_column(Boolean, default=False)
    torch_version: Mapped[str | None] = mapped_column(String(100))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime())
    heartbeat_at: Mapped[datetime] = mapped_column(UtcDateTime())
    stopped_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # One host, several GPUs (migration 0008): the per-host slot is the GPU the worker is
    # pinned to (`worker --gpu N`), so hostname + host_slot names it on its host.
    host_slot: Mapped[int | None] = mapped_column(Integer)
    host_policy: Mapped[str | None] = mapped_column(String(16))
    cuda_visible_devices: Mapped[str | None] = mapped_column(String(200))
    cpus: Mapped[str | None] = mapped_column(String(1000))

    __table_args__ = (
        Index("ix_workers_heartbeat_at", "heartbeat_at"),
        CheckConstraint("host_policy IS NULL OR " + _one_of("host_policy", HOST_POLICIES),
                        name="ck_worker_host_policy"),
    )


# --- Serve runs (issue 5): a request stream replayed under each strategy ---------------
# Vocabularies and field names come from contract/serve_record.py, the serve section of
# the bundle; a serve run is a RunRow with kind 'serve' and no measurements.

class ServeConfigRow(Base):
    """What was replayed: the distribution, the seed and the stream itself (so every
    figure can be recomputed)."""

    __tablename__ = "serve_configs"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"),
                                        primary_key=True)
    batch_dist: Mapped[str] = mapped_column(String(MAX_DIST_TEXT))
    requests: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger)
    strategies: Mapped[list[str]] = mapped_column(JSON, default=list)
    stream: Mapped[list[int]] = mapped_column(JSON, default=list)

    __table_args__ = (CheckConstraint("requests >= 1", name="ck_serve_config_requests"),)


class ServeResultRow(Base):
    """One strategy's replay of the stream."""

    __tablename__ = "serve_results"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    strategy: Mapped[str] = mapped_column(String(2000))
    kind: Mapped[str] = mapped_column(String(32))
    buckets: Mapped[list[int]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text, default="")
    execution: Mapped[str | None] = mapped_column(String(32))
    requests: Mapped[int | None] = mapped_column(Integer)
    real_rows: Mapped[int | None] = mapped_column(BigInteger)
    latency_ms_mean: Mapped[float | None] = mapped_column(Float)
    latency_ms_p50: Mapped[float | None] = mapped_column(Float)
    latency_ms_p99: Mapped[float | None] = mapped_column(Float)
    requests_per_s: Mapped[float | None] = mapped_column(Float)
    rows_per_s: Mapped[float | None] = mapped_column(Float)
    padding_waste: Mapped[float | None] = mapped_column(Float)
    wasted_fraction: Mapped[float | None] = mapped_column(Float)
    hit_rate: Mapped[float | None] = mapped_column(Float)
    fallback_rate: Mapped[float | None] = mapped_column(Float)
    graphs: Mapped[int | None] = mapped_column(Integer)
    graph_pool_bytes: Mapped[int | None] = mapped_column(BigInteger)
    setup_s: Mapped[float | None] = mapped_column(Float)
    host_launches_per_request: Mapped[float | None] = mapped_column(Float)
    graph_launches_per_request: Mapped[float | None] = mapped_column(Float)
    max_abs_err: Mapped[float | None] = mapped_column(Float)
    correct: Mapped[bool | None] = mapped_column(Boolean)
    latencies_ms: Mapped[list[float]] = mapped_column(default=list)
    details: Mapped[JsonObject] = mapped_column(default=dict)

    __table_args__ = (
        UniqueConstraint("run_id", "strategy", name="uq_serve_result_strategy"),
        CheckConstraint(_one_of("status", serve_record.STATUSES), name="ck_serve_result_status"),
        CheckConstraint(_one_of("kind", STRATEGY_KINDS), name="ck_serve_result_kind"),
    )


class ServeProfilePointRow(Base):
    """One candidate bucket size, measured alone: what the advisor chooses from."""

    __tablename__ = "serve_profile"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    batch_size: Mapped[int] = mapped_column(Integer)
    bucket_ms: Mapped[float | None] = mapped_column(Float)
    eager_ms: Mapped[float | None] = mapped_column(Float)
    pool_bytes: Mapped[int | None] = mapped_column(BigInteger)
    pool_extra_bytes: Mapped[int | None] = mapped_column(BigInteger)
    capture_s: Mapped[float | None] = mapped_column(Float)
    execution: Mapped[str | None] = mapped_column(String(32))

    __table_args__ = (
        UniqueConstraint("run_id", "batch_size", name="uq_serve_profile_size"),
        CheckConstraint("batch_size >= 1", name="ck_serve_profile_batch_size"),
    )


# --- Graph-memory runs (issue 27): one CUDA graph captured per size, the pools read after
# each capture (contract/graph_memory.py, the bundle's "graph_memory" section); a
# RunRow of kind 'graph-memory' with no measurements. The attribution (fixed MiB per capture,
# MiB per row, a shared pool's MiB per further graph) is derived from these rows on read.

class GraphMemoryCaptureRow(Base):
    """One capture of a series: cumulative figures since the series began."""

    __tablename__ = "graph_memory_captures"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    pool: Mapped[str] = mapped_column(String(16))
    position: Mapped[int] = mapped_column(Integer)  # 1 = the first (largest) capture
    batch_size: Mapped[int] = mapped_column(Integer)
    capture_s: Mapped[float] = mapped_column(Float)
    pool_reserved_bytes: Mapped[int] = mapped_column(BigInteger)
    allocated_bytes: Mapped[int] = mapped_column(BigInteger)
    device_used_bytes: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        UniqueConstraint("run_id", "pool", "position", name="uq_graph_memory_capture"),
        CheckConstraint(_one_of("pool", graph_memory.POOLS), name="ck_graph_memory_pool"),
        CheckConstraint("batch_size >= 1", name="ck_graph_memory_batch_size"),
        CheckConstraint("pool_reserved_bytes >= 0", name="ck_graph_memory_pool_bytes"),
    )
