"""Writing results: runs as they are measured, and whole bundles in and out."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, selectinload

from db.access import require_writable
from db.models import Environment, Measurement, Run
from runner import bundle as fmt
from runner.bundle import BundleError


class RunNotFound(LookupError):
    pass


def environment_key(env: dict[str, Any]) -> str:
    """Identical environments share one row: the key hashes every field."""
    canon = json.dumps({f: env.get(f) for f in fmt.ENVIRONMENT_FIELDS}, sort_keys=True)
    return hashlib.sha256(canon.encode()).hexdigest()


def _environment(session: Session, env: dict[str, Any]) -> Environment:
    key = environment_key(env)
    row = session.scalar(select(Environment).where(Environment.key == key))
    if row is None:
        # Workers on one host start runs at the same moment: a plain INSERT after the
        # SELECT above would hit the unique key when another one got there first.
        dialect = session.get_bind().dialect.name
        insert = pg_insert if dialect == "postgresql" else sqlite_insert
        session.execute(insert(Environment).values(
            key=key, **{f: env.get(f) for f in fmt.ENVIRONMENT_FIELDS})
            .on_conflict_do_nothing(index_elements=["key"]))
        row = session.scalar(select(Environment).where(Environment.key == key))
    return row


def _run_row(run: dict[str, Any], env_row: Environment) -> Run:
    return Run(
        uuid=run["uuid"], environment=env_row, workload=run["workload"],
        workload_params=run.get("workload_params") or {}, dtype=run.get("dtype"),
        created_at=fmt.parse_time(run["created_at"]),
        finished_at=fmt.parse_time(run.get("finished_at")),
        status=run["status"], label=run.get("label"), source=run.get("source") or "measured",
        command=run.get("command"), kind=run.get("kind") or "sweep")


def _measurement_row(m: dict[str, Any]) -> Measurement:
    values = {f: m.get(f) for f in fmt.MEASUREMENT_FIELDS}
    values["message"] = values["message"] or ""
    values["cudagraph_status"] = values["cudagraph_status"] or "n/a"
    values["samples_ms"] = values["samples_ms"] or []
    values["details"] = values["details"] or {}
    return Measurement(**values)


def start_run(engine: Engine, environment: dict[str, Any], run: dict[str, Any]) -> int:
    """Store a run's header before its first point; returns the run id."""
    with Session(engine) as s, s.begin():
        row = _run_row(run, _environment(s, environment))
        s.add(row)
        s.flush()
        return row.id


def add_measurement(engine: Engine, run_id: int, measurement: dict[str, Any]) -> None:
    """Commit one finished point, so a crash loses only the point in flight."""
    with Session(engine) as s, s.begin():
        row = _measurement_row(measurement)
        row.run_id = run_id
        s.add(row)


def finish_run(engine: Engine, run_id: int, status: str,
               finished_at: datetime | None = None) -> None:
    if status not in fmt.RUN_STATUSES:
        raise ValueError(f"unknown run status {status!r}")
    with Session(engine) as s, s.begin():
        row = s.get(Run, run_id)
        if row is None:
            raise RunNotFound(f"run {run_id} does not exist")
        row.status = status
        row.finished_at = finished_at or fmt.parse_time(fmt.now_iso())


def import_bundle(engine: Engine, doc: dict[str, Any]) -> tuple[int, bool]:
    """Store a validated bundle in one transaction. Returns (run id, created); a bundle
    whose uuid is already stored adds nothing (created is False)."""
    require_writable("import a run")  # read-only share mode: enforced here, not only in the UI
    doc = fmt.validate(doc)
    run = doc["run"]
    with Session(engine) as s, s.begin():
        existing = s.scalar(select(Run.id).where(Run.uuid == run["uuid"]))
        if existing is not None:
            return existing, False
        row = _run_row(run, _environment(s, doc["environment"]))
        row.measurements = [_measurement_row(m) for m in doc["measurements"]]
        s.add(row)
        s.flush()
        if doc.get("serve") is not None:  # a serve run (bundle version 2): same transaction
            from db.serve import add_section

            add_section(s, row.id, doc["serve"])
        return row.id, True


def _iso(t: datetime | None) -> str | None:
    if t is None:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=fmt.timezone.utc)).isoformat()


def export_bundle(engine: Engine, run_id: int) -> dict[str, Any]:
    """The run as a bundle dict, exactly what `import_bundle` takes back."""
    with Session(engine) as s:
        row = s.scalar(select(Run).where(Run.id == run_id).options(
            selectinload(Run.measurements), selectinload(Run.environment)))
        if row is None:
            raise RunNotFound(f"run {run_id} does not exist")
        env = {f: getattr(row.environment, f) for f in fmt.ENVIRONMENT_FIELDS}
        run = {f: getattr(row, f) for f in fmt.RUN_FIELDS}
        run["created_at"], run["finished_at"] = _iso(row.created_at), _iso(row.finished_at)
        ms = [{f: getattr(m, f) for f in fmt.MEASUREMENT_FIELDS} for m in row.measurements]
        serve = None
        if row.kind == "serve":
            from db.serve import read_section

            serve = read_section(s, row.id)
    return fmt.make_bundle(env, run, ms, serve=serve)


__all__ = ["BundleError", "RunNotFound", "add_measurement", "environment_key",
           "export_bundle", "finish_run", "import_bundle", "start_run"]
