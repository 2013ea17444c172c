"""The job queue: sweeps queued by the dashboard or `enqueue`, claimed by workers.

Claiming is one statement on both backends: `UPDATE jobs ... WHERE id = (SELECT id ...
FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING ...`. PostgreSQL locks the chosen row and lets
other workers skip it; SQLite renders no FOR UPDATE (it has none) but takes its write lock
at the start of the UPDATE, so the whole statement is atomic there too.

Times come from the database server on PostgreSQL (GPU hosts' clocks may disagree, and a
skewed clock must not make a live worker look lost); SQLite lives on one host, so Python's
UTC clock is that host's clock.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine

from contract import queue
from contract.json_shape import JsonObject
from contract.limits import (
    HEARTBEAT_S,
    LOST_AFTER_S,
    MAX_JOB_POINTS,
    MAX_QUEUED_JOBS,
    MAX_QUEUED_PER_SESSION,
)
from contract.specs import SpecError, SweepSpec, check_sweep, check_text, estimate_cost
from contract.vocab import FINISHED_STATUSES, JOB_EXECUTORS
from db import liveness
from db.access import require_writable
from db.hosts import check_fields
from db.models import JobRow, RunRow, WorkerRow

# HEARTBEAT_S (how often a worker says it is alive) and LOST_AFTER_S (silence after which
# a worker, its job or any run counts as lost) are contract/limits.py's, re-exported.
# The fields of a queued job's spec: sweep's flags as data, no more.
# energy (issue 28): a queued sweep may turn its energy windows off, as --no-energy does.
JOB_FIELDS = {"workload", "params", "batch_sizes", "modes", "device", "timing", "label",
              "energy"}
MAX_ID = 2**31 - 1  # an INTEGER key: a larger id cannot exist (and PostgreSQL would refuse it)
_QUEUE_LOCK = 0x6C62_7175  # PostgreSQL advisory lock key held while queueing ("lbqu")


class JobSpecError(ValueError):
    """A job spec that cannot be queued. str() is one line naming the bad value."""


class JobNotFound(LookupError):
    pass


class JobFinished(ValueError):
    """Cancelling a job that already ended."""


class QueueFull(JobSpecError):
    """The queue holds as many waiting jobs as it may (in all, or from this session)."""


# --- the spec -------------------------------------------------------------------------

def check_spec(spec: SweepSpec | JsonObject, memory_bytes: int | None = None
               ) -> SweepSpec:
    """A queued sweep's spec as a SweepSpec, or JobSpecError.

    A dict (a job row, sweep's flags as data) gets the contract's one check (contract/
    specs.py), as a queued job: only registered workloads (a job runs on whichever worker
    claims it, so it may never name a Python import path) and device "auto" allowed. A
    SweepSpec was checked so where it entered (the Launch form, `enqueue`). Either way its
    cost is bounded here: the estimated peak memory must fit `memory_bytes` (the target's
    memory; unknown: the default GPU's). A job runs in its worker's one process."""
    if isinstance(spec, SweepSpec):
        s = spec
    elif not isinstance(spec, dict):
        raise JobSpecError(f"job spec must be an object, got {type(spec).__name__}")
    elif set(spec) - JOB_FIELDS:
        raise JobSpecError(f"unknown job spec field {sorted(set(spec) - JOB_FIELDS)[0]!r}")
    else:
        try:
            s = check_sweep(spec, queued=True)
        except SpecError as e:
            raise JobSpecError(str(e)) from None
    if len(s.batch_sizes) * len(s.modes) > MAX_JOB_POINTS:
        raise JobSpecError(f"{len(s.batch_sizes)} batch sizes x {len(s.modes)} modes is "
                           f"more than {MAX_JOB_POINTS} points for one job")
    refusal = estimate_cost(s.workload, s.params, s.batch_sizes, s.modes).refusal(
        memory_bytes)
    if refusal:
        raise JobSpecError(refusal)
    return replace(s, processes=1)


# --- helpers ----------------------------------------------------------------------------

def _aware(t: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything here is stored in UTC.
    return t if t is None or t.tzinfo else t.replace(tzinfo=timezone.utc)


def db_now(engine: Engine) -> datetime:
    """The clock every heartbeat is compared with."""
    if not liveness.is_postgres(engine):
        return datetime.now(timezone.utc)
    with engine.connect() as c:
        found = _aware(c.scalar(select(func.now())))
    assert found is not None  # now() is never NULL
    return found


def _record(cls: Any, row: Any) -> Any:
    # The boundary: a row's columns, times made aware, become a record.
    return cls.from_row({k: _aware(v) if isinstance(v, datetime) else v
                         for k, v in row._mapping.items()})


def _job(row: Any) -> queue.Job:
    job: queue.Job = _record(queue.Job, row)
    return job


def _worker(row: Any) -> queue.Worker:
    worker: queue.Worker = _record(queue.Worker, row)
    return worker


# --- queueing (browser-reachable writes: guarded) --------------------------------------

def enqueue(engine: Engine, spec: SweepSpec | JsonObject, target: str | None = None,
            label: str | None = None, *, executor: str = "local",
            gpu_type: str | None = None, session: str | None = None,
            memory_bytes: int | None = None) -> int:
    """Queue a sweep; returns the job id. `label` overrides the spec's label.

    A "slurm" job is claimed only by `worker --job ID` (runner/ops/slurm.py submits that).
    `session`: the dashboard session queueing it; refused (QueueFull) when that session
    already has MAX_QUEUED_PER_SESSION waiting jobs or the queue MAX_QUEUED_JOBS. `memory_bytes`:
    the target's memory when known (default: DEFAULT_GPU_MEMORY_BYTES)."""
    require_writable("queue a job")
    if label is not None and isinstance(spec, SweepSpec):
        try:
            spec = replace(spec, label=check_text(label, "label"))
        except SpecError as e:
            raise JobSpecError(str(e)) from None
    elif label is not None:
        spec = {**spec, "label": label} if isinstance(spec, dict) else spec
    spec = check_spec(spec, memory_bytes)
    try:
        target = check_text(target, "target")
        gpu_type = check_text(gpu_type, "GPU type")
        session = check_text(session, "session")
    except SpecError as e:
        raise JobSpecError(str(e)) from None
    if session is not None and len(session) > 64:
        raise JobSpecError(f"session {session[:20]!r}... is longer than 64 characters")
    if executor not in JOB_EXECUTORS:
        raise JobSpecError(f"executor {executor!r} is not one of {', '.join(JOB_EXECUTORS)}")
    with engine.begin() as c:
        if liveness.is_postgres(c):
            # Concurrent enqueues must not both see room for one more job: one at a time
            # (a transaction-scoped lock, released at commit). SQLite: the INSERT below
            # takes the file's write lock before the count, which does the same.
            c.execute(select(func.pg_advisory_xact_lock(_QUEUE_LOCK)))
        job_id = c.execute(
            insert(JobRow).values(
                spec=spec.to_json(queued=True), device=spec.device, target=target,
                label=spec.label, status="queued", cancel_requested=False,
                created_at=liveness.now_expr(c), points_done=0,
                points_total=len(spec.modes) * len(spec.batch_sizes),
                message="", executor=executor, gpu_type=gpu_type, session=session)
            .returning(JobRow.id)).scalar_one()
        # Counted after the insert, in the same transaction: raising rolls it back. Only
        # a dashboard session is capped: the CLI's user can run sweeps directly anyway.
        if session is not None:
            waiting = c.scalar(select(func.count()).select_from(JobRow)
                               .where(JobRow.status == "queued"))
            if (waiting or 0) > MAX_QUEUED_JOBS:
                raise QueueFull(f"not queued: the queue already holds {MAX_QUEUED_JOBS} "
                                "waiting jobs; wait for some to run or cancel some")
            mine = c.scalar(select(func.count()).select_from(JobRow).where(
                JobRow.status == "queued", JobRow.session == session))
            if (mine or 0) > MAX_QUEUED_PER_SESSION:
                raise QueueFull(f"not queued: this session already has "
                                f"{MAX_QUEUED_PER_SESSION} waiting jobs; wait for them "
                                "to run or cancel some")
        return int(job_id)


def cancel(engine: Engine, job_id: int) -> str:
    """A queued job is cancelled at once; a running one is asked to stop, and its worker
    stops between points. Returns the job's status afterwards ("cancelled" or "running")."""
    require_writable("cancel a job")
    _check_id(job_id)
    with engine.begin() as c:
        done = c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "queued")
                         .values(status="cancelled", cancel_requested=True,
                                 finished_at=liveness.now_expr(c),
                                 message="cancelled before it started")
                         .returning(JobRow.id)).first()
        if done:
            return "cancelled"
        running = c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running")
                            .values(cancel_requested=True).returning(JobRow.id)).first()
        if running:
            return "running"
        status = c.scalar(select(JobRow.status).where(JobRow.id == job_id))
    if status is None:
        raise JobNotFound(f"job {job_id} does not exist")
    raise JobFinished(f"job {job_id} already ended ({status}): nothing to cancel")


def _check_id(job_id: int) -> None:
    if not 1 <= job_id <= MAX_ID:
        raise JobNotFound(f"job {job_id} does not exist")


def _shown(c: Connection, now: datetime | None) -> Any:
    """The job's status as readers show it ("lost" for a running job gone silent: see
    db/liveness.py), beside the stored one."""
    return liveness.job_status(liveness.cutoff(c, now)).label("shown_status")


def get_job(engine: Engine, job_id: int, *, now: datetime | None = None) -> queue.Job:
    """The job's row, plus shown_status (decided at `now`, default the database's now)."""
    _check_id(job_id)
    with engine.connect() as c:
        row = c.execute(select(*JobRow.__table__.c, _shown(c, now))
                        .where(JobRow.id == job_id)).first()
    if row is None:
        raise JobNotFound(f"job {job_id} does not exist")
    return _job(row)


def list_jobs(engine: Engine, *, limit: int = 50,
              now: datetime | None = None) -> list[queue.Job]:
    """Newest first, each with shown_status (see get_job)."""
    with engine.connect() as c:
        stmt = select(*JobRow.__table__.c, _shown(c, now)).order_by(JobRow.id.desc()).limit(limit)
        return [_job(r) for r in c.execute(stmt)]


# --- workers ----------------------------------------------------------------------------

def register_worker(engine: Engine, *, name: str, hostname: str | None, pid: int | None,
                    gpu_name: str | None, has_cuda: bool,
                    torch_version: str | None, **host: Any) -> int:
    """`host`: where on its host the worker sits (db/hosts.py FIELDS), all optional.
    Refused in read-only share mode: a worker claims jobs and writes runs."""
    require_writable("run a worker (it claims jobs and writes runs)")
    with engine.begin() as c:
        now = liveness.now_expr(c)
        return int(c.execute(insert(WorkerRow).values(
            name=name, hostname=hostname, pid=pid, gpu_name=gpu_name, has_cuda=has_cuda,
            torch_version=torch_version, started_at=now, heartbeat_at=now,
            **check_fields(host)).returning(WorkerRow.id)).scalar_one())


def stop_worker(engine: Engine, worker_id: int) -> None:
    with engine.begin() as c:
        c.execute(update(WorkerRow).where(WorkerRow.id == worker_id)
                  .values(stopped_at=liveness.now_expr(c)))


def live_workers(engine: Engine, timeout_s: float = LOST_AFTER_S, *,
                 now: datetime | None = None) -> list[queue.Worker]:
    """Workers that heartbeated within `timeout_s` of `now` (default: the database's
    clock) and did not say goodbye."""
    with engine.connect() as c:
        cutoff = liveness.cutoff(c, now, timeout_s)
        rows = c.execute(select(WorkerRow.__table__).where(
            WorkerRow.stopped_at.is_(None), WorkerRow.heartbeat_at >= cutoff)
            .order_by(WorkerRow.id))
        return [_worker(r) for r in rows]


def can_serve(worker: queue.Worker, job: queue.Job) -> bool:
    """The rule claim_next applies in SQL, for the page's 'is anyone there?' question."""
    if job.device == "cuda" and not worker.has_cuda:
        return False
    target = (job.target or "").lower()
    return not target or target in ((worker.name or "").lower(),
                                    (worker.gpu_name or "").lower())


def claim_next(engine: Engine, worker: queue.Worker) -> queue.Job | None:
    """Atomically take the oldest queued job this worker can serve; None if there is none.

    `worker` is the registered worker: its id, name, gpu_name and has_cuda count."""
    names = [n.lower() for n in (worker.name, worker.gpu_name) if n]
    serves = [JobRow.status == "queued", JobRow.executor == "local",
              or_(JobRow.target.is_(None), func.lower(JobRow.target).in_(names))]
    if not worker.has_cuda:
        serves.append(JobRow.device != "cuda")
    pick = (select(JobRow.id).where(and_(*serves)).order_by(JobRow.id).limit(1)
            .with_for_update(skip_locked=True).scalar_subquery())
    with engine.begin() as c:
        now = liveness.now_expr(c)
        row = c.execute(update(JobRow).where(JobRow.id == pick, JobRow.status == "queued")
                        .values(status="running", worker_id=worker.id,
                                worker_name=worker.name, started_at=now,
                                heartbeat_at=now)
                        .returning(*JobRow.__table__.c)).first()
    return _job(row) if row else None


def claim_job(engine: Engine, worker: queue.Worker, job_id: int,
              slurm_job_id: str | None = None) -> queue.Job | None:
    """Take one named job (`worker --job ID`, what a Slurm batch job runs), whatever its
    executor or target: the scheduler already placed it. None unless it was still queued,
    so a requeued batch job (same job, second start) never runs it twice.

    `slurm_job_id`: the batch job doing the claiming; recorded, so a job submitted by hand
    from `slurm-script` is followed (cancel, reconciliation) like a submitted one."""
    _check_id(job_id)
    # Only a batch job's id is written: a hand-run `worker --job` keeps any recorded one.
    slurm = {"slurm_job_id": slurm_job_id} if slurm_job_id else {}
    with engine.begin() as c:
        now = liveness.now_expr(c)
        row = c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "queued")
                        .values(status="running", worker_id=worker.id,
                                worker_name=worker.name, **slurm, started_at=now,
                                heartbeat_at=now)
                        .returning(*JobRow.__table__.c)).first()
    return _job(row) if row else None


def set_slurm_job(engine: Engine, job_id: int, slurm_job_id: str) -> None:
    """Remember the batch job submitted for `job_id` (unless its worker already did)."""
    with engine.begin() as c:
        c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.slurm_job_id.is_(None))
                  .values(slurm_job_id=slurm_job_id))


def withdraw(engine: Engine, job_id: int) -> None:
    """Delete a Slurm job whose submission failed: nothing was submitted, nobody else may
    claim it (executor slurm), so it leaves no trace, as bad input must not."""
    with engine.begin() as c:
        c.execute(delete(JobRow).where(JobRow.id == job_id, JobRow.status == "queued",
                                                  JobRow.slurm_job_id.is_(None)))


def slurm_jobs_in_flight(engine: Engine) -> list[queue.Job]:
    """Queued or running jobs with a Slurm batch job: what reconciliation looks at."""
    stmt = select(*JobRow.__table__.c).where(
        JobRow.status.in_(("queued", "running")), JobRow.slurm_job_id.is_not(None)
    ).order_by(JobRow.id)
    with engine.connect() as c:
        return [_job(r) for r in c.execute(stmt)]


def end_unfinished(engine: Engine, job_id: int, status: str, message: str) -> bool:
    """End a job that is still queued or running because whatever ran it is gone (its
    Slurm job ended): `status` failed or cancelled, and its run the same. False if it
    had ended meanwhile: the verdict already given stands."""
    if status not in ("failed", "cancelled"):
        raise ValueError(f"status {status!r} must be failed or cancelled")
    with engine.begin() as c:
        now = liveness.now_expr(c)
        row = c.execute(update(JobRow).where(JobRow.id == job_id,
                                             JobRow.status.in_(("queued", "running")))
                        .values(status=status, finished_at=now, current_point=None,
                                message=message[:2000]).returning(JobRow.run_id)).first()
        if row is not None and row.run_id is not None:
            # "cancelled" too: the sweep calls an interrupt it did not ask for a cancel.
            c.execute(update(RunRow).where(RunRow.id == row.run_id,
                                           RunRow.status.in_(("running", "cancelled")))
                      .values(status=status, finished_at=now))
    return row is not None


def heartbeat(engine: Engine, worker_id: int, job_id: int | None = None, *,
              progress: tuple[int, int, str | None] | None = None) -> bool:
    """Say the worker (and its job) is alive; with `progress` = (done, total, current
    point) also record how far the job got. Returns True when the job was asked to stop."""
    with engine.begin() as c:
        now = liveness.now_expr(c)
        c.execute(update(WorkerRow).where(WorkerRow.id == worker_id).values(heartbeat_at=now))
        if job_id is None:
            return False
        points = {} if progress is None else {
            "points_done": progress[0], "points_total": progress[1],
            "current_point": progress[2]}
        stop = c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running")
                         .values(heartbeat_at=now, **points)
                         .returning(JobRow.cancel_requested)).scalar()
    # A job no longer running (reaped as lost, say) must stop too: nobody waits for it.
    return stop is None or bool(stop)


def note(engine: Engine, job_id: int, message: str) -> None:
    """A running job's message while it runs: what it waits for (contract/queue.py
    lock_wait_message), "" once it waits no more. A job that ended keeps its verdict."""
    with engine.begin() as c:
        c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running")
                  .values(message=message[:2000]))


def queue_place(engine: Engine, job: queue.Job) -> tuple[int, list[queue.Job]]:
    """A queued job's place: how many queued jobs of its executor were queued before it
    (claim_next takes the oldest first), and the jobs running now (whom the live workers
    are busy with)."""
    with engine.connect() as c:
        ahead = c.scalar(select(func.count()).select_from(JobRow).where(
            JobRow.status == "queued", JobRow.executor == job.executor,
            JobRow.id < job.id))
        running = [_job(r) for r in c.execute(select(*JobRow.__table__.c).where(
            JobRow.status == "running").order_by(JobRow.id))]
    return int(ahead or 0), running


def link_run(engine: Engine, job_id: int, run_id: int) -> None:
    with engine.begin() as c:
        c.execute(update(JobRow).where(JobRow.id == job_id).values(run_id=run_id))


def finish(engine: Engine, job_id: int, status: str, message: str = "") -> bool:
    """End a running job. False if it was no longer running (reaped meanwhile): the
    verdict already given stands."""
    if status not in FINISHED_STATUSES:
        raise ValueError(f"job status {status!r} is not one of {', '.join(FINISHED_STATUSES)}")
    with engine.begin() as c:
        return c.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running")
                         .values(status=status, finished_at=liveness.now_expr(c),
                                 current_point=None, message=message[:2000])
                         .returning(JobRow.id)).first() is not None


def reap_lost(engine: Engine, timeout_s: float = LOST_AFTER_S, *,
              now: datetime | None = None) -> list[int]:
    """Persist what readers already show (db/liveness.py): running jobs whose heartbeat
    is older than `timeout_s` become failed ("worker lost"), and their runs too; so do
    running runs with no live writer of their own (a SIGKILLed `runner sweep`). Their
    finished points stay: only statuses change. Returns the lost jobs' ids.

    Workers call this before each claim, `runner sweep` before it starts, and the Launch
    page on its button only; the common case (nothing lost) is one read: the write
    transaction (SQLite's file lock) only when needed."""
    with engine.connect() as c:
        limit = liveness.cutoff(c, now, timeout_s)
        stale = c.execute(select(JobRow.id).where(liveness.job_is_lost(limit)).limit(1)).first()
        stale_run = c.execute(select(RunRow.id).where(liveness.run_is_lost(limit))
                              .limit(1)).first()
    if stale is None and stale_run is None:
        return []
    require_writable("mark lost runs and jobs")
    with engine.begin() as c:
        at, limit = liveness.now_expr(c), liveness.cutoff(c, now, timeout_s)
        lost = c.execute(update(JobRow).where(liveness.job_is_lost(limit))
                         .values(status="failed", finished_at=at, current_point=None,
                                 message="worker lost: no heartbeat for "
                                         f"{timeout_s:g} s").returning(JobRow.id, JobRow.run_id)
                         ).all()
        run_ids = [r.run_id for r in lost if r.run_id is not None]
        if run_ids:
            c.execute(update(RunRow).where(RunRow.id.in_(run_ids), RunRow.status == "running")
                      .values(status="failed", finished_at=at))
        # A run's own heartbeat (a sweep writing it, in a worker or not): a job still
        # running keeps its run (its worker beats both; the job's verdict comes first).
        alive = select(JobRow.run_id).where(JobRow.status == "running", JobRow.run_id.is_not(None))
        c.execute(update(RunRow).where(liveness.run_is_lost(limit), RunRow.id.not_in(alive))
                  .values(status="failed", finished_at=at))
    return sorted(r.id for r in lost)


def progress(job: queue.Job, now: datetime) -> queue.JobProgress:
    """Elapsed seconds and a linear estimate of the time left (None while unknown)."""
    start, end = job.started_at, job.finished_at
    elapsed = None if start is None else max(0.0, ((end or now) - start).total_seconds())
    done, total = job.points_done or 0, job.points_total
    remaining = None
    if job.status == "running" and elapsed is not None and done and total:
        remaining = elapsed / done * (total - done)
    return queue.JobProgress(elapsed_s=elapsed, remaining_s=remaining, done=done,
                             total=total, fraction=(done / total) if total else None)


__all__ = ["FINISHED_STATUSES", "HEARTBEAT_S", "LOST_AFTER_S", "JobFinished",
           "JobNotFound", "JobSpecError", "QueueFull", "can_serve", "cancel", "check_spec",
           "claim_job",
           "claim_next", "db_now", "end_unfinished", "enqueue", "finish", "get_job",
           "heartbeat", "link_run", "list_jobs", "live_workers", "note", "progress",
           "queue_place", "reap_lost",
           "register_worker", "set_slurm_job", "slurm_jobs_in_flight", "stop_worker",
           "withdraw"]
