"""Lost: a run or job still marked running whose writer stopped heartbeating.

Readers decide it at read time, with no write, so a read-only dashboard shows the truth
too: a running row whose heartbeat is older than limits.LOST_AFTER_S is shown as "lost".
Writers (a worker, `runner sweep`, the Launch page's explicit button) persist it through
db/jobs.py reap_lost, as status "failed": "lost" is a shown status, not one a bundle or a
CHECK constraint knows, so a run reaped and a run read stay one vocabulary apart only in
how the page words them.

The clock is the database's on PostgreSQL (see db/jobs.py) and the host's on SQLite; tests
pass `now` to decide without waiting.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import case, func, literal
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.elements import Case

from contract import queue
from contract.limits import LOST_AFTER_S
from db.models import JobRow, RunRow

LOST = "lost"


def is_postgres(bind: Engine | Connection) -> bool:
    """PostgreSQL (the database's clock, row locks), else SQLite."""
    return bind.dialect.name == "postgresql"


def now_expr(bind: Engine | Connection, now: datetime | None = None) -> Any:
    """'now' as a value or SQL expression: `now` if given, else the database's clock."""
    if now is not None:
        return now
    return func.now() if is_postgres(bind) else datetime.now(timezone.utc)


def cutoff(bind: Engine | Connection, now: datetime | None = None,
           timeout_s: float = LOST_AFTER_S) -> Any:
    """Heartbeats before this are too old: their writer is gone."""
    return now_expr(bind, now) - timedelta(seconds=timeout_s)


def run_is_lost(limit: Any) -> Any:  # a SQL condition
    # A run from before heartbeats (migration 0006) has none: its start stands in.
    return (RunRow.status == "running") & (func.coalesce(RunRow.heartbeat_at, RunRow.created_at)
                                           < limit)


def job_is_lost(limit: Any) -> Any:  # a SQL condition
    return (JobRow.status == "running") & (func.coalesce(JobRow.heartbeat_at, JobRow.started_at)
                                           < limit)


def run_status(limit: Any) -> Case[Any]:
    """Run.status as readers show it: "lost" for a running run gone silent."""
    return case((run_is_lost(limit), literal(LOST)), else_=RunRow.status)


def job_status(limit: Any) -> Case[Any]:
    return case((job_is_lost(limit), literal(LOST)), else_=JobRow.status)


def lost_runs(engine: Engine, now: datetime | None = None,
              timeout_s: float = LOST_AFTER_S) -> list[int]:
    """Ids of the runs readers show as lost (a read: nothing is written)."""
    from sqlalchemy import select

    with engine.connect() as c:
        return list(c.execute(select(RunRow.id).where(run_is_lost(cutoff(c, now, timeout_s)))
                              .order_by(RunRow.id)).scalars())


def shown_job_status(job: queue.Job, now: datetime, timeout_s: float = LOST_AFTER_S) -> str:
    """The same rule for a job already read (a record from db/jobs.py)."""
    beat = job.heartbeat_at or job.started_at
    if job.status == "running" and beat is not None:
        if beat.tzinfo is None:
            beat = beat.replace(tzinfo=timezone.utc)
        if beat < now - timedelta(seconds=timeout_s):
            return LOST
    return job.status or ""


__all__ = ["LOST", "cutoff", "job_is_lost", "job_status", "lost_runs", "now_expr",
           "run_is_lost", "run_status", "shown_job_status"]
