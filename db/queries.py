"""Reading results: named queries the CLI and the dashboard call (SQL lives only in db/)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import ColumnElement, Row, Select, case, func, select
from sqlalchemy.engine import Connection, Engine

from contract.measurement import MEASUREMENT_FIELDS, Measurement, details_of
from contract.run_record import ENVIRONMENT_FIELDS
from contract.run_summary import (
    SUMMARY_COLUMNS,
    SUMMARY_DETAILS,
    RunHeader,
    RunListing,
    RunSummary,
    summarize,
)
from contract.trace import PointTrace
from db import liveness, records
from db.models import EnvironmentRow, MeasurementRow, RunRow, ServeResultRow, TraceRow

SUMMARY_HEADER = ("id", "uuid", "kind", "workload", "workload_params", "dtype", "created_at",
                  "finished_at", "status", "label", "source")
SUMMARY_ENVIRONMENT = ("device", "gpu_name", "torch_version", "hostname")


def run_summaries(engine: Engine, run_ids: Sequence[int] | None = None,
                  now: datetime | None = None) -> list[RunSummary]:
    """The runs' summaries (contract/run_summary.py): header and key figures, built
    by its summarize() from each run's points. All runs newest first when `run_ids` is
    None, else those of the ids that exist, in the order asked. `now`: the time "lost" is
    decided at (default: the database's clock). Two statements whatever the number."""
    ids = None if run_ids is None else [int(i) for i in run_ids]
    if ids == []:
        return []
    with engine.connect() as c:
        # status as readers show it: "lost" for a running run whose writer went silent
        # (db/liveness.py), decided here at read time, so read-only mode shows it too.
        status = liveness.run_status(liveness.cutoff(c, now)).label("status")
        stmt = (select(*(status if f == "status" else getattr(RunRow, f)
                         for f in SUMMARY_HEADER),
                       *(getattr(EnvironmentRow, f) for f in SUMMARY_ENVIRONMENT))
                .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
                .order_by(RunRow.created_at.desc(), RunRow.id.desc()))
        if ids is not None:
            stmt = stmt.where(RunRow.id.in_(ids))
        headers = [records.header(row._mapping) for row in c.execute(stmt)]
        sweeps = [h.id for h in headers if h.kind == "sweep"]
        points: dict[int, list[Measurement]] = {}
        if sweeps:
            rows = c.execute(select(MeasurementRow.run_id,
                                    *(getattr(MeasurementRow, f) for f in SUMMARY_COLUMNS))
                             .where(MeasurementRow.run_id.in_(sweeps)))
            for row in rows:
                points.setdefault(row.run_id, []).append(
                    records.measurement(row._mapping, SUMMARY_DETAILS))
    summaries = [summarize(h, points.get(h.id, ())) for h in headers]
    if ids is None:
        return summaries
    order = {rid: i for i, rid in enumerate(ids)}
    return sorted(summaries, key=lambda s: order[s.header.id])


def list_runs(engine: Engine, now: datetime | None = None) -> list[RunSummary]:
    """Every run, newest first, with what tells runs apart (workload, GPU, torch, status:
    "lost" for a running run whose writer went silent, see db/liveness.py) and its key
    figures: what `runner list` prints."""
    return run_summaries(engine, None, now)


def run_summary(engine: Engine, run_id: int, now: datetime | None = None
                ) -> RunSummary | None:
    """One run's summary; None when no run has this id."""
    found = run_summaries(engine, [run_id], now)
    return found[0] if found else None


# --- The dashboard's reads: DataFrames for pages (pandas is a dashboard dependency) -----
# The indexes these rely on already exist: runs.created_at for the newest-first list and
# the unique (run_id, mode, batch_size) constraint, whose index leads with run_id, for a
# run's points. bench/dashboard_bench.py times them at 1,000 runs / 100,000 points.

RUN_COLUMNS = ("id", "uuid", "kind", "workload", "workload_params", "dtype", "created_at",
               "finished_at", "status", "label", "source", "command")
CPU = "cpu"  # what a run without a GPU shows and filters as, in the GPU column


def _run_env_columns(c: Connection | Engine, now: datetime | None = None) -> list[Any]:
    # status as readers show it: "lost" for a running run whose writer went silent
    # (db/liveness.py), decided here at read time, so read-only mode shows it too.
    shown = {"status": liveness.run_status(liveness.cutoff(c, now)).label("status")}
    return ([shown.get(col, getattr(RunRow, col)) for col in RUN_COLUMNS]
            + [getattr(EnvironmentRow, f) for f in ENVIRONMENT_FIELDS])


def _frame(rows: Iterable[Row[Any]], columns: Sequence[str]) -> pd.DataFrame:
    df = pd.DataFrame([dict(r._mapping) for r in rows], columns=list(columns))
    for c in ("created_at", "finished_at"):
        if c in df:
            # SQLite hands back naive datetimes; every stored time is UTC.
            df[c] = pd.to_datetime(df[c], utc=True)
    return df


def run_filter_options(engine: Engine) -> dict[str, list[str]]:
    """Distinct GPU names (``cpu`` for CPU runs), workloads and torch versions."""
    gpu = func.coalesce(EnvironmentRow.gpu_name, CPU)
    with engine.connect() as c:
        gpus = sorted(c.execute(select(gpu).select_from(RunRow).join(EnvironmentRow)
                                .distinct()).scalars())
        workloads = sorted(c.execute(select(RunRow.workload).distinct()).scalars())
        torches = sorted(v for v in c.execute(
            select(EnvironmentRow.torch_version).select_from(RunRow).join(EnvironmentRow)
            .distinct()).scalars() if v is not None)
    return {"gpu": gpus, "workload": workloads, "torch": torches}


def _runs_statement(c: Connection, gpus: Sequence[str], workloads: Sequence[str],
                    torches: Sequence[str], now: datetime | None
                    ) -> tuple[Select[Any], list[str]]:
    """Runs with their environment and point counts, newest first (runs_frame's and
    runs_list's one statement) and the names of its columns."""
    # The noise counts the Runs page badges (contract/noise.py counts the same
    # conditions over a run's points): summed here so listing runs never loads a point.
    measured = (MeasurementRow.status == "ok") & MeasurementRow.step_ms.is_not(None)
    flags = {
        "ok_points": MeasurementRow.status == "ok",
        "unsupported_points": MeasurementRow.status == "unsupported",
        "interval_points": measured & MeasurementRow.step_ms_ci_low.is_not(None)
        & MeasurementRow.step_ms_ci_high.is_not(None),
        "noisy_points": measured & MeasurementRow.noisy.is_(True),
        "unstable_points": measured & MeasurementRow.host_unstable.is_(True),
    }
    counts = (select(MeasurementRow.run_id, func.count().label("points"),
                     *(func.sum(case((cond, 1), else_=0)).label(name)
                       for name, cond in flags.items()))
              .group_by(MeasurementRow.run_id).subquery())
    stmt = (select(*_run_env_columns(c, now),
                   func.coalesce(counts.c.points, 0).label("points"),
                   *(func.coalesce(counts.c[name], 0).label(name) for name in flags))
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .outerjoin(counts, counts.c.run_id == RunRow.id)
            .order_by(RunRow.created_at.desc(), RunRow.id.desc()))
    if gpus:
        named = [g for g in gpus if g != CPU]
        cond: ColumnElement[bool] = EnvironmentRow.gpu_name.in_(named)
        if CPU in gpus:
            cond = cond | EnvironmentRow.gpu_name.is_(None)
        stmt = stmt.where(cond)
    if workloads:
        stmt = stmt.where(RunRow.workload.in_(list(workloads)))
    if torches:
        stmt = stmt.where(EnvironmentRow.torch_version.in_(list(torches)))
    return stmt, [*RUN_COLUMNS, *ENVIRONMENT_FIELDS, "points", *flags]


def runs_list(engine: Engine, *, gpus: Sequence[str] = (), workloads: Sequence[str] = (),
              torches: Sequence[str] = (), now: datetime | None = None
              ) -> list[RunListing]:
    """Runs with their environment, point counts and noise counts, newest first, as
    records (db/records.py). An empty filter list means no filter on that field; ``cpu``
    in `gpus` matches runs without a GPU. `now`: the time "lost" is decided at (default:
    the database's clock)."""
    with engine.connect() as c:
        stmt, _ = _runs_statement(c, gpus, workloads, torches, now)
        return [records.listing(row._mapping) for row in c.execute(stmt)]


def runs_frame(engine: Engine, *, gpus: Sequence[str] = (), workloads: Sequence[str] = (),
               torches: Sequence[str] = (), limit: int | None = None,
               now: datetime | None = None) -> pd.DataFrame:
    """runs_list as a frame, one column a field (`runner check` and runner/history read
    runs as frames)."""
    with engine.connect() as c:
        stmt, columns = _runs_statement(c, gpus, workloads, torches, now)
        if limit is not None:
            stmt = stmt.limit(limit)
        return _frame(c.execute(stmt), columns)


def runs_headers(engine: Engine, run_ids: Sequence[int],
                 now: datetime | None = None) -> pd.DataFrame:
    """Header and environment of the given runs (those that exist), in the order asked."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return pd.DataFrame(columns=[*RUN_COLUMNS, *ENVIRONMENT_FIELDS])
    stmt = (select(*_run_env_columns(engine, now))
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .where(RunRow.id.in_(ids)))
    with engine.connect() as c:
        df = _frame(c.execute(stmt), [*RUN_COLUMNS, *ENVIRONMENT_FIELDS])
    order = {rid: i for i, rid in enumerate(ids)}
    return df.sort_values("id", key=lambda s: s.map(order)).reset_index(drop=True)


def run_headers(engine: Engine, run_ids: Sequence[int], now: datetime | None = None
                ) -> list[RunHeader]:
    """The given runs' headers (those that exist) as records, in the order asked."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return []
    with engine.connect() as c:
        stmt = (select(*_run_env_columns(c, now))
                .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
                .where(RunRow.id.in_(ids)))
        found = {h.id: h for h in (records.header(r._mapping) for r in c.execute(stmt))}
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def run_header(engine: Engine, run_id: int, now: datetime | None = None) -> RunHeader | None:
    """One run's header and environment; None when no run has this id."""
    found = run_headers(engine, [run_id], now)
    return found[0] if found else None


POINT_COLUMNS = ("run_id", *MEASUREMENT_FIELDS)


def runs_points(engine: Engine, run_ids: Sequence[int]) -> pd.DataFrame:
    """Every measurement of the given runs, ordered by run, mode, batch size."""
    ids = [int(i) for i in run_ids]
    cols = [MeasurementRow.run_id] + [getattr(MeasurementRow, f) for f in MEASUREMENT_FIELDS]
    stmt = (select(*cols).where(MeasurementRow.run_id.in_(ids))
            .order_by(MeasurementRow.run_id, MeasurementRow.mode, MeasurementRow.batch_size))
    if not ids:
        return pd.DataFrame(columns=list(POINT_COLUMNS))
    with engine.connect() as c:
        df = _frame(c.execute(stmt), POINT_COLUMNS)
    # Integer byte counts with NULLs would come back as object or float; keep them numeric
    # with NaN for unknown so the maths stays vectorised (never 0 for unknown).
    for f in MEASUREMENT_FIELDS:
        if f not in ("mode", "status", "message", "cudagraph_status", "correct",
                     "stop_reason", "noisy", "host_unstable", "samples_ms",
                     "launch_us_rounds", "details", "energy_unavailable_reason"):
            df[f] = pd.to_numeric(df[f], errors="coerce")
    return df


def points(engine: Engine, run_ids: Sequence[int],
           columns: Sequence[str] = MEASUREMENT_FIELDS) -> dict[int, list[Measurement]]:
    """Every point of the given runs as `Measurement` records (db/records.py), by run id
    (a run without points has none), each run's in mode and batch order. `columns`: the
    measurement fields to read (default all: the others read as unknown)."""
    ids = [int(i) for i in run_ids]
    out: dict[int, list[Measurement]] = {i: [] for i in ids}
    if not ids:
        return out
    stmt = (select(MeasurementRow.run_id, *(getattr(MeasurementRow, f) for f in columns))
            .where(MeasurementRow.run_id.in_(ids))
            .order_by(MeasurementRow.run_id, MeasurementRow.mode, MeasurementRow.batch_size))
    with engine.connect() as c:
        for row in c.execute(stmt):
            out[row.run_id].append(records.measurement(row._mapping))
    return out


def run_points(engine: Engine, run_id: int) -> list[Measurement]:
    """One run's points as records."""
    return points(engine, [run_id])[int(run_id)]


def point_traces(engine: Engine, run_ids: Sequence[int], batch_size: int
                 ) -> list[PointTrace]:
    """The kept traces of the given runs at one batch size, by run and mode. One batch
    size at a time: a run's traces are read only for what is drawn."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return []
    stmt = (select(MeasurementRow.run_id, MeasurementRow.mode, TraceRow.trace)
            .join(TraceRow, TraceRow.measurement_id == MeasurementRow.id)
            .where(MeasurementRow.run_id.in_(ids), MeasurementRow.batch_size == int(batch_size))
            .order_by(MeasurementRow.run_id, MeasurementRow.mode))
    with engine.connect() as c:
        return [PointTrace(run_id=r, mode=m, batch_size=int(batch_size), trace=t)
                for r, m, t in c.execute(stmt)]


# What the Trends page and the Launch page's estimate read of each point: not the raw
# samples (the speedup with its interval, energy, and details for a published point's own
# eager reference and the setup phases).
KEY_POINT_COLUMNS = ("mode", "batch_size", "status", "step_ms", "speedup", "speedup_ci_low",
                     "speedup_ci_high", "graph_pool_bytes", "details", "energy_mj_per_step",
                     "energy_gain", "energy_gain_ci_low", "energy_gain_ci_high")


SERVE_KEY_COLUMNS = ("run_id", "strategy", "status", "rows_per_s", "latency_ms_p99",
                     "graph_pool_bytes")


def serve_key_results(engine: Engine, run_ids: Sequence[int]) -> pd.DataFrame:
    """Each strategy's headline figures for the given serve runs (the Runs board)."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return pd.DataFrame(columns=list(SERVE_KEY_COLUMNS))
    stmt = (select(*(getattr(ServeResultRow, c) for c in SERVE_KEY_COLUMNS))
            .where(ServeResultRow.run_id.in_(ids))
            .order_by(ServeResultRow.run_id, ServeResultRow.id))
    with engine.connect() as c:
        df = _frame(c.execute(stmt), SERVE_KEY_COLUMNS)
    for f in ("rows_per_s", "latency_ms_p99", "graph_pool_bytes"):
        df[f] = pd.to_numeric(df[f], errors="coerce")
    return df


# The environment's machine (GPU, host CPU, driver) too: a series is one machine's runs
# unless the reader asks to mix (runner/history/series.py machine_key).
TREND_RUN_COLUMNS = ("id", "created_at", "workload", "workload_params", "dtype", "source",
                     "label", "torch_version", "gpu_name", "hostname", "device",
                     "cpu_model", "driver_version")


def trend_runs(engine: Engine, workload: str, gpu: str) -> pd.DataFrame:
    """Every sweep of `workload` on GPU `gpu` (``cpu``: runs without a GPU), oldest
    first: the runs a Trends view follows over torch versions and dates."""
    stmt = (select(*(getattr(RunRow, c) for c in TREND_RUN_COLUMNS[:7]),
                   *(getattr(EnvironmentRow, c) for c in TREND_RUN_COLUMNS[7:]))
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .where(RunRow.kind == "sweep", RunRow.workload == workload)
            .order_by(RunRow.created_at, RunRow.id))
    stmt = stmt.where(EnvironmentRow.gpu_name.is_(None) if gpu == CPU
                      else EnvironmentRow.gpu_name == gpu)
    with engine.connect() as c:
        return _frame(c.execute(stmt), TREND_RUN_COLUMNS)


def series_headers(engine: Engine, workload: str, gpu: str) -> list[RunHeader]:
    """trend_runs' sweeps as records, oldest first: the runs the Trends page follows."""
    stmt = (select(*_run_env_columns(engine))
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .where(RunRow.kind == "sweep", RunRow.workload == workload)
            .order_by(RunRow.created_at, RunRow.id))
    stmt = stmt.where(EnvironmentRow.gpu_name.is_(None) if gpu == CPU
                      else EnvironmentRow.gpu_name == gpu)
    with engine.connect() as c:
        return [records.header(r._mapping) for r in c.execute(stmt)]


def gpu_memory(engine: Engine, gpu: str | None) -> int | None:
    """The memory of GPU `gpu` as runs measured on it recorded it; None when unknown."""
    if not gpu or gpu == CPU:
        return None
    with engine.connect() as c:
        return c.scalar(select(func.max(EnvironmentRow.gpu_memory_bytes))
                        .where(func.lower(EnvironmentRow.gpu_name) == gpu.lower()))


def past_durations(engine: Engine, workload: str | None, gpu: str | None = None,
                   limit: int = 20) -> pd.DataFrame:
    """The latest finished sweeps of `workload` (None: any workload) on GPU `gpu` when
    given (``cpu``: runs without a GPU), one row each: run_id, created_at, finished_at,
    points, point_wall_s (the sum of the points' details["point_wall_s"]; NaN where no
    point recorded one).
    What the Launch page estimates a new sweep's duration from."""
    stmt = (select(RunRow.id.label("run_id"), RunRow.created_at, RunRow.finished_at)
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .where(RunRow.kind == "sweep", RunRow.status == "done",
                   RunRow.source == "measured", RunRow.finished_at.is_not(None))
            .order_by(RunRow.created_at.desc(), RunRow.id.desc()).limit(limit))
    if workload is not None:
        stmt = stmt.where(RunRow.workload == workload)
    if gpu == CPU:
        stmt = stmt.where(EnvironmentRow.gpu_name.is_(None))
    elif gpu:
        stmt = stmt.where(func.lower(EnvironmentRow.gpu_name) == gpu.lower())
    cols = ["run_id", "created_at", "finished_at", "points", "point_wall_s"]
    with engine.connect() as c:
        runs = _frame(c.execute(stmt), ["run_id", "created_at", "finished_at"])
        if runs.empty:
            return pd.DataFrame(columns=cols)
        pts = c.execute(select(MeasurementRow.run_id, MeasurementRow.details)
                        .where(MeasurementRow.run_id.in_([int(i) for i in runs["run_id"]])))
        per: dict[int, list[Any]] = {}
        for rid, details in pts:
            wall = details_of(details).timing.point_wall_s
            per.setdefault(int(rid), []).append(wall)
    runs["points"] = [len(per.get(int(r), [])) for r in runs["run_id"]]
    runs["point_wall_s"] = [
        float(sum(w for w in walls if isinstance(w, (int, float))))
        if any(isinstance(w, (int, float)) for w in walls) else float("nan")
        for walls in (per.get(int(r), []) for r in runs["run_id"])]
    return runs[cols]


def data_version(engine: Engine) -> tuple[Any, ...]:
    """A cheap fingerprint that changes whenever a run or point is added, a run finishes
    or is deleted, or a point is replaced (db.store.replace_measurement gives the new
    figures a new row id): the dashboard keys its caches on it, so a worker's writes in
    another process show up without waiting for a cache ttl."""
    with engine.connect() as c:
        runs = c.execute(select(func.max(RunRow.id), func.count(RunRow.finished_at),
                                func.count(RunRow.id))).one()
        points = c.execute(select(func.max(MeasurementRow.id))).scalar()
        # A run going lost is no write at all: counted, so it shows without a ttl wait.
        lost = c.execute(select(func.count()).select_from(RunRow).where(
            liveness.run_is_lost(liveness.cutoff(c)))).scalar()
    return (*runs, points, lost)
