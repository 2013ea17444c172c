"""Writing results: runs as they are measured, and whole bundles in and out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, selectinload

from db import rows
from db.access import require_writable
from db.models import Run
from db.rows import RunNotFound, environment_key  # noqa: F401 - part of this API
from runner.format import bundle as fmt
from runner.format.bundle import BundleError


def start_run(engine: Engine, environment: dict[str, Any], run: dict[str, Any]) -> int:
    """Store a run's header before its first point; returns the run id."""
    with Session(engine) as s, s.begin():
        row = rows.run_row(run, rows.environment_row(s, environment))
        s.add(row)
        s.flush()
        return row.id


def add_measurement(engine: Engine, run_id: int, measurement: dict[str, Any]) -> None:
    """Commit one finished point, so a crash loses only the point in flight."""
    with Session(engine) as s, s.begin():
        row = rows.measurement_row(measurement)
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
        row = rows.run_row(run, rows.environment_row(s, doc["environment"]))
        row.measurements = [rows.measurement_row(m) for m in doc["measurements"]]
        s.add(row)
        s.flush()
        if doc.get("serve") is not None:  # a serve run (bundle version 2): same transaction
            rows.add_section(s, row.id, doc["serve"])
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
            serve = rows.read_section(s, row.id)
    return fmt.make_bundle(env, run, ms, serve=serve)


__all__ = ["BundleError", "RunNotFound", "add_measurement", "environment_key",
           "export_bundle", "finish_run", "import_bundle", "start_run"]
