"""Serve runs in the database: written as they are measured, read back for bundles and
for the dashboard's serve page (DataFrames; SQL only here, through select())."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd
from sqlalchemy import Row, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from contract import serve_record as rec
from contract.json_shape import as_json
from contract.run_record import Environment, Run
from contract.run_summary import RunHeader
from contract.serve_record import ServeConfig, ServeProfilePoint, ServeResult
from db import records, rows
from db.models import EnvironmentRow, RunRow, ServeConfigRow, ServeProfilePointRow, ServeResultRow
from db.rows import RunNotFound, add_section, read_section  # noqa: F401 - part of this API

# --- writing -----------------------------------------------------------------------------

def start_serve_run(engine: Engine, environment: Environment, run: Run,
                    config: ServeConfig) -> int:
    """The run header and what is replayed (distribution, seed, stream), in one
    transaction, before the first strategy runs. Returns the run id."""
    with Session(engine) as s, s.begin():
        row = rows.run_row(replace(run, kind="serve"), rows.environment_row(s, environment))
        s.add(row)
        s.flush()
        s.add(rows.config_row(row.id, config))
        return row.id


def add_result(engine: Engine, run_id: int, result: ServeResult) -> None:
    """Commit one strategy as soon as it finishes: a crash loses only the one in flight."""
    with Session(engine) as s, s.begin():
        cfg = s.get(ServeConfigRow, run_id)
        if cfg is None:
            raise RunNotFound(f"serve run {run_id} does not exist")
        rows.check_part(rec.validate_result, as_json(result), cfg.requests,
                        f"strategy {result.strategy!r}")
        s.add(rows.result_row(run_id, result))


def add_profile(engine: Engine, run_id: int, points: list[ServeProfilePoint]) -> None:
    with Session(engine) as s, s.begin():
        for i, p in enumerate(points):
            rows.check_part(rec.validate_profile_point, as_json(p), f"profile point {i}")
            s.add(rows.profile_row(run_id, p))


# --- reading for the dashboard -----------------------------------------------------------

SERVE_RUN_COLUMNS = ("id", "uuid", "created_at", "workload", "workload_params", "status",
                     "label", "command", "device", "gpu_name", "hostname", "torch_version",
                     "batch_dist", "requests", "seed")


def _frame(rows: Iterable[Row[Any]], columns: Sequence[str]) -> pd.DataFrame:
    df = pd.DataFrame([dict(r._mapping) for r in rows], columns=list(columns))
    if "created_at" in df:
        df["created_at"] = pd.to_datetime(df["created_at"], utc=True)  # stored as UTC
    return df


def _serve_runs_stmt() -> Any:  # a select() of its columns
    return (select(RunRow.id, RunRow.uuid, RunRow.created_at, RunRow.workload,
                   RunRow.workload_params, RunRow.status, RunRow.label, RunRow.command,
                   EnvironmentRow.device, EnvironmentRow.gpu_name, EnvironmentRow.hostname,
                   EnvironmentRow.torch_version, ServeConfigRow.batch_dist,
                   ServeConfigRow.requests, ServeConfigRow.seed)
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .join(ServeConfigRow, ServeConfigRow.run_id == RunRow.id)
            .where(RunRow.kind == "serve"))


def serve_runs(engine: Engine) -> pd.DataFrame:
    """Every serve run, newest first."""
    stmt = _serve_runs_stmt().order_by(RunRow.created_at.desc(), RunRow.id.desc())
    with engine.connect() as c:
        return _frame(c.execute(stmt), SERVE_RUN_COLUMNS)


def serve_run(engine: Engine, run_id: int) -> tuple[RunHeader, ServeConfig]:
    """One serve run's header (with its environment) and what it replays; RunNotFound
    when there is none."""
    stmt = _serve_runs_stmt().add_columns(ServeConfigRow.strategies, ServeConfigRow.stream,
                                          EnvironmentRow.gpu_memory_bytes)
    with engine.connect() as c:
        row = c.execute(stmt.where(RunRow.id == run_id)).first()
    if row is None:
        raise RunNotFound(f"no serve run with id {run_id}")
    values = row._mapping
    return (records.header({**values, "kind": "serve"}),
            ServeConfig(**{f: values[f] for f in rec.CONFIG_FIELDS}))


def serve_results(engine: Engine, run_id: int) -> pd.DataFrame:
    """One row per strategy, in the order they ran."""
    cols = [getattr(ServeResultRow, f) for f in rec.RESULT_FIELDS]
    stmt = select(*cols).where(ServeResultRow.run_id == run_id).order_by(ServeResultRow.id)
    with engine.connect() as c:
        return _frame(c.execute(stmt), rec.RESULT_FIELDS)


def serve_profile(engine: Engine, run_id: int) -> pd.DataFrame:
    cols = [getattr(ServeProfilePointRow, f) for f in rec.PROFILE_FIELDS]
    stmt = (select(*cols).where(ServeProfilePointRow.run_id == run_id)
            .order_by(ServeProfilePointRow.batch_size))
    with engine.connect() as c:
        return _frame(c.execute(stmt), rec.PROFILE_FIELDS)


def serve_requests(engine: Engine, run_id: int) -> pd.DataFrame:
    """Long format, one row per (strategy, request): its batch size and latency."""
    _, config = serve_run(engine, run_id)
    results = serve_results(engine, run_id)
    stream = list(config.stream)
    frames = [pd.DataFrame({"strategy": r.strategy, "request": range(len(stream)),
                            "batch_size": stream, "latency_ms": list(r.latencies_ms)})
              for r in results.itertuples() if len(r.latencies_ms or []) == len(stream)]
    if not frames:
        return pd.DataFrame(columns=["strategy", "request", "batch_size", "latency_ms"])
    return pd.concat(frames, ignore_index=True)
