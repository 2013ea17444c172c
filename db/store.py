"""Writing results: runs as they are measured, and whole bundles in and out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, selectinload

from contract import bundle as fmt
from contract import graph_memory as gm
from contract.bundle import BundleError
from contract.measurement import Measurement
from contract.run_record import Environment, Run
from contract.serve_record import ServeSection
from db import graph_memory as dbgm
from db import liveness, rows
from db.access import require_writable
from db.models import MeasurementRow, RunRow, TraceRow
from db.rows import RunNotFound, environment_key  # noqa: F401 - part of this API


def start_run(engine: Engine, environment: Environment, run: Run) -> int:
    """Store a run's header before its first point; returns the run id. Its first
    heartbeat too: the writer then calls heartbeat_run until it finishes the run."""
    with Session(engine) as s, s.begin():
        row = rows.run_row(run, rows.environment_row(s, environment))
        row.heartbeat_at = liveness.now_expr(engine)
        s.add(row)
        s.flush()
        return row.id


def heartbeat_run(engine: Engine, run_id: int) -> bool:
    """Say the run's writer is alive. False when the run is no longer running (reaped
    as lost, say): the writer's beats change nothing then."""
    with engine.begin() as c:
        return c.execute(update(RunRow).where(RunRow.id == run_id, RunRow.status == "running")
                         .values(heartbeat_at=liveness.now_expr(c))
                         .returning(RunRow.id)).first() is not None


def add_measurement(engine: Engine, run_id: int, point: Measurement) -> None:
    """Commit one finished point, so a crash loses only the point in flight. A point is
    a sign of life: the run's heartbeat moves in the same transaction."""
    measurement = point.to_json()
    fmt.check_measurement(measurement)  # BundleError: one line, nothing written
    with Session(engine) as s, s.begin():
        row = rows.measurement_row(measurement)
        row.run_id = run_id
        s.add(row)
        s.execute(update(RunRow).where(RunRow.id == run_id, RunRow.status == "running")
                  .values(heartbeat_at=liveness.now_expr(engine)))


def replace_measurement(engine: Engine, run_id: int, point: Measurement) -> None:
    """Replace the run's point at the same (mode, batch_size) with `measurement`, in one
    transaction: `--processes K` stores each point from its first pass and replaces it as
    later passes add their rounds. The new row gets a new id, so queries.data_version
    (max point id) moves and the dashboard's caches see the new figures. A point not
    stored yet is added."""
    from sqlalchemy import delete

    measurement = point.to_json()
    fmt.check_measurement(measurement)  # BundleError: one line, nothing written
    with Session(engine) as s, s.begin():
        old = select(MeasurementRow.id).where(
            MeasurementRow.run_id == run_id, MeasurementRow.mode == measurement["mode"],
            MeasurementRow.batch_size == measurement["batch_size"])
        # Explicit, not only ON DELETE CASCADE: SQLite enforces it only with the pragma.
        s.execute(delete(TraceRow).where(TraceRow.measurement_id.in_(old)))
        s.execute(delete(MeasurementRow).where(MeasurementRow.id.in_(old)))
        row = rows.measurement_row(measurement)
        row.run_id = run_id
        s.add(row)
        s.execute(update(RunRow).where(RunRow.id == run_id, RunRow.status == "running")
                  .values(heartbeat_at=liveness.now_expr(engine)))


def finish_run(engine: Engine, run_id: int, status: str,
               finished_at: datetime | None = None) -> None:
    if status not in fmt.RUN_STATUSES:
        raise ValueError(f"unknown run status {status!r}")
    with Session(engine) as s, s.begin():
        row = s.get(RunRow, run_id)
        if row is None:
            raise RunNotFound(f"run {run_id} does not exist")
        row.status = status
        row.finished_at = finished_at or fmt.parse_time(fmt.now_iso())


class BundleConflict(BundleError):
    """A bundle whose uuid is stored already, with other content. str() names both."""


def _canon(v: Any) -> Any:
    """A value as it compares after a trip through either database: numbers as floats,
    times as aware UTC, lists of points in a stable order."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    return [_canon(x) for x in v]


def fingerprint(doc: fmt.Bundle) -> str:
    """The content of a validated bundle, independent of its format version."""
    import json

    run = dict(doc["run"])
    for f in ("created_at", "finished_at"):
        t = fmt.parse_time(run.get(f))
        run[f] = t.astimezone(fmt.timezone.utc).isoformat() if t else None
    ms = sorted(doc["measurements"], key=lambda m: (m["mode"], m["batch_size"]))
    body = {"environment": doc["environment"], "run": run, "measurements": ms}
    if doc.get("serve") is not None:
        serve = dict(doc["serve"])
        serve["profile"] = sorted(serve.get("profile") or [], key=lambda p: p["batch_size"])
        body["serve"] = serve
    if doc.get(gm.SECTION) is not None:
        body[gm.SECTION] = doc[gm.SECTION]
    return json.dumps(_canon(body), sort_keys=True)


def import_bundle(engine: Engine, doc: fmt.BundleDoc | fmt.Bundle, name: str = "the bundle"
                  ) -> tuple[int, bool]:
    """Store a bundle in one transaction. Returns (run id, created); a bundle whose uuid
    is already stored with the same content adds nothing (created is False); with other
    content it is refused (BundleConflict names both)."""
    require_writable("import a run")  # read-only share mode: enforced here, not only in the UI
    # A bundle read from a file (fmt.read, fmt.loads) was checked where it was read; only
    # a dict built in code (a test, a benchmark) is checked here. Once either way.
    doc = doc if isinstance(doc, fmt.Bundle) else fmt.validate(doc)
    run = doc["run"]
    with Session(engine) as s:
        existing = s.scalar(select(RunRow.id).where(RunRow.uuid == run["uuid"]))
    if existing is not None:
        _same_or_conflict(engine, existing, doc, name)
        return existing, False
    with Session(engine) as s, s.begin():
        row = rows.run_row(Run.from_json(run), rows.environment_row(
            s, Environment.from_json(doc["environment"])))
        row.measurements = [rows.measurement_row(m) for m in doc["measurements"]]
        s.add(row)
        s.flush()
        if doc.get("serve") is not None:  # a serve run (bundle version 2): same transaction
            rows.add_section(s, row.id, ServeSection.from_json(doc["serve"]))
        found = doc.get("graph_memory")  # gm.SECTION
        if found is not None:  # a graph-memory run: same transaction
            dbgm.add_section(s, row.id, found)
        return row.id, True


def import_safely(engine: Engine, doc: fmt.BundleDoc | fmt.Bundle, name: str) -> tuple[int, bool]:
    """import_bundle with every failure as one BundleError line naming `name` (read-only
    mode stays db.access.ReadOnlyError): the CLI, /import and the fuzz test use this."""
    from sqlalchemy.exc import IntegrityError, SQLAlchemyError

    try:
        return import_bundle(engine, doc, name=repr(name))
    except (PermissionError, BundleConflict):
        raise
    except BundleError as e:
        raise BundleError(f"{name}: {e}") from None
    except IntegrityError:
        # The same uuid stored by someone else a moment ago: the transaction rolled back.
        raise BundleError(f"{name}: run uuid {doc['run']['uuid']} was stored by another "
                          "import at the same moment; nothing added") from None
    except SQLAlchemyError as e:
        # A value the format check let through but a column refuses, or the database
        # going away: the transaction rolled back.
        first = (str(getattr(e, "orig", None) or e).strip().splitlines() or ["?"])[0]
        raise BundleError(f"{name}: the database refused the bundle, nothing was "
                          f"imported: {first}") from None
    except Exception as e:  # noqa: BLE001 - the promise is one line, whatever broke
        raise BundleError(f"{name}: cannot import ({type(e).__name__}: {str(e)[:200]!r}); "
                          "nothing was imported") from None


def _same_or_conflict(engine: Engine, run_id: int, doc: fmt.Bundle, name: str) -> None:
    try:
        # The stored run, not the one being imported: checked so that both sides are in
        # validate()'s normal form before their fingerprints are compared.
        stored = fmt.validate(export_bundle(engine, run_id))
        same = fingerprint(stored) == fingerprint(doc)
    except (BundleError, RunNotFound):  # a stored run that no longer reads: not the same
        same = False
    if not same:
        raise BundleConflict(
            f"conflict: {name} has run uuid {doc['run']['uuid']}, already stored as run "
            f"{run_id} with different content; nothing imported (delete run {run_id} "
            "first to replace it)")


@dataclass(frozen=True)
class DeletedRun:
    """What delete_run removed, for its message."""
    id: int
    uuid: str
    workload: str
    points: int


def delete_run(engine: Engine, run_id: int) -> DeletedRun:
    """Remove a run with its points and serve data; returns a few facts for the message.
    Refused in read-only share mode; RunNotFound when there is no such run."""
    require_writable("delete a run")
    from sqlalchemy import delete, func

    from db.models import (
        GraphMemoryCaptureRow,
        JobRow,
        ServeConfigRow,
        ServeProfilePointRow,
        ServeResultRow,
    )

    with Session(engine) as s, s.begin():
        row = s.get(RunRow, run_id)
        if row is None:
            raise RunNotFound(f"run {run_id} does not exist")
        facts = DeletedRun(run_id, row.uuid, row.workload,
                           s.scalar(select(func.count()).select_from(MeasurementRow)
                                    .where(MeasurementRow.run_id == run_id)) or 0)
        # Explicit deletes, not only ON DELETE CASCADE: SQLite enforces it only with the
        # foreign_keys pragma, and a job keeps its row with the run link cleared.
        s.execute(update(JobRow).where(JobRow.run_id == run_id).values(run_id=None))
        s.execute(delete(TraceRow).where(TraceRow.measurement_id.in_(
            select(MeasurementRow.id).where(MeasurementRow.run_id == run_id))))
        for model in (MeasurementRow, ServeResultRow, ServeProfilePointRow, ServeConfigRow,
                      GraphMemoryCaptureRow):
            s.execute(delete(model).where(model.run_id == run_id))
        s.execute(delete(RunRow).where(RunRow.id == run_id))
    return facts


def export_bundle(engine: Engine, run_id: int) -> fmt.BundleDoc:
    """The run as a bundle dict, exactly what `import_bundle` takes back."""
    with Session(engine) as s:
        row = s.scalar(select(RunRow).where(RunRow.id == run_id).options(
            selectinload(RunRow.measurements).selectinload(MeasurementRow.trace_row),
            selectinload(RunRow.environment)))
        if row is None:
            raise RunNotFound(f"run {run_id} does not exist")
        env = {f: getattr(row.environment, f) for f in fmt.ENVIRONMENT_FIELDS}
        run = {f: getattr(row, f) for f in fmt.RUN_FIELDS}
        run.update(created_at=rows.iso(row.created_at), finished_at=rows.iso(row.finished_at))
        ms = [{**{f: getattr(m, f) for f in fmt.MEASUREMENT_FIELDS},
               fmt.TRACE_FIELD: m.trace_row.trace if m.trace_row is not None else None}
              for m in row.measurements]
        serve = graph_memory = None
        if row.kind == "serve":
            serve = rows.read_section(s, row.id).to_json()
        elif row.kind == dbgm.KIND:
            graph_memory = dbgm.read_section(s, row.id)
    return fmt.make_bundle(env, run, ms, serve=serve, graph_memory=graph_memory)


__all__ = ["BundleConflict", "BundleError", "DeletedRun", "RunNotFound", "add_measurement",
           "delete_run", "environment_key", "export_bundle", "fingerprint", "finish_run",
           "heartbeat_run", "import_bundle", "import_safely", "start_run"]
