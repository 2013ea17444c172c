"""Rows from bundle dicts and back: what db/store.py (sweeps) and db/serve.py (serve runs)
both write, in one place so neither imports the other."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from contract import bundle as fmt
from contract import serve_record as rec
from contract.bundle import BundleError
from contract.json_shape import JsonObject
from contract.measurement import MEASUREMENT_FIELDS, TRACE_FIELD
from contract.run_record import Environment, Run
from contract.serve_record import ServeConfig, ServeProfilePoint, ServeResult, ServeSection
from db.models import (
    EnvironmentRow,
    MeasurementRow,
    RunRow,
    ServeConfigRow,
    ServeProfilePointRow,
    ServeResultRow,
    TraceRow,
)


class RunNotFound(LookupError):
    pass


def iso(t: datetime | None) -> str | None:
    """A stored time as the bundle writes it (SQLite hands back naive UTC datetimes)."""
    if t is None:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).isoformat()


def environment_key(env: Environment) -> str:
    """Identical environments share one row: the key hashes every field."""
    canon = json.dumps(env.to_json(), sort_keys=True)
    return hashlib.sha256(canon.encode()).hexdigest()


def environment_row(session: Session, env: Environment) -> EnvironmentRow:
    key = environment_key(env)
    row = session.scalar(select(EnvironmentRow).where(EnvironmentRow.key == key))
    if row is None:
        # Workers on one host start runs at the same moment: a plain INSERT after the
        # SELECT above would hit the unique key when another one got there first.
        dialect = session.get_bind().dialect.name
        insert = pg_insert if dialect == "postgresql" else sqlite_insert
        session.execute(insert(EnvironmentRow).values(
            key=key, **env.to_json())
            .on_conflict_do_nothing(index_elements=["key"]))
        row = session.scalar(select(EnvironmentRow).where(EnvironmentRow.key == key))
    assert row is not None  # inserted above, or there already
    return row


def run_row(run: Run, env_row: EnvironmentRow) -> RunRow:
    return RunRow(
        uuid=run.uuid, environment=env_row, workload=run.workload,
        workload_params=dict(run.workload_params), dtype=run.dtype,
        created_at=fmt.parse_time(run.created_at), finished_at=fmt.parse_time(run.finished_at),
        status=run.status, label=run.label, source=run.source, command=run.command,
        kind=run.kind)


def measurement_row(m: JsonObject) -> MeasurementRow:
    values = {f: m.get(f) for f in MEASUREMENT_FIELDS}
    values["message"] = values["message"] or ""
    values["cudagraph_status"] = values["cudagraph_status"] or "n/a"
    values["samples_ms"] = values["samples_ms"] or []
    values["details"] = values["details"] or {}
    row = MeasurementRow(**values)
    if m.get(TRACE_FIELD) is not None:
        row.trace_row = TraceRow(trace=m[TRACE_FIELD])
    return row


def check_part(fn: Callable[..., object], *args: object) -> None:
    try:
        fn(*args)
    except rec.SectionError as e:
        raise BundleError(str(e)) from None


def config_row(run_id: int, c: ServeConfig) -> ServeConfigRow:
    return ServeConfigRow(run_id=run_id, batch_dist=c.batch_dist, requests=c.requests,
                          seed=c.seed, strategies=list(c.strategies), stream=list(c.stream))


def result_row(run_id: int, r: ServeResult) -> ServeResultRow:
    values = {f: getattr(r, f) for f in rec.RESULT_FIELDS}
    values.update(buckets=list(r.buckets), latencies_ms=list(r.latencies_ms))
    return ServeResultRow(run_id=run_id, **values)


def profile_row(run_id: int, p: ServeProfilePoint) -> ServeProfilePointRow:
    return ServeProfilePointRow(run_id=run_id,
                                **{f: getattr(p, f) for f in rec.PROFILE_FIELDS})


# --- the serve section of a bundle, inside import_bundle's / export_bundle's session -----

def add_section(session: Session, run_id: int, section: ServeSection) -> None:
    """A validated bundle's serve section, inside import_bundle's transaction."""
    session.add(config_row(run_id, section.config))
    for r in section.results:
        session.add(result_row(run_id, r))
    for p in section.profile:
        session.add(profile_row(run_id, p))


def read_section(session: Session, run_id: int) -> ServeSection:
    cfg = session.get(ServeConfigRow, run_id)
    if cfg is None:
        raise RunNotFound(f"run {run_id} is a serve run without its serve data")
    results = session.scalars(select(ServeResultRow).where(ServeResultRow.run_id == run_id)
                              .order_by(ServeResultRow.id)).all()
    profile = session.scalars(select(ServeProfilePointRow)
                              .where(ServeProfilePointRow.run_id == run_id)
                              .order_by(ServeProfilePointRow.batch_size)).all()
    return ServeSection(
        ServeConfig(cfg.batch_dist, cfg.requests, cfg.seed, list(cfg.strategies),
                    list(cfg.stream)),
        [ServeResult.from_json({f: getattr(r, f) for f in rec.RESULT_FIELDS}) for r in results],
        [ServeProfilePoint(**{f: getattr(p, f) for f in rec.PROFILE_FIELDS}) for p in profile])
