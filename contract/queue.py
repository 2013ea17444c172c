"""The queue's records: a job, a worker, a job's progress, as db/jobs.py hands them out.

Typed so that the worker, the CLI and the Launch page read attributes, not a row's keys:
a misspelt field fails where it is written, not as a None on a page. The database row
is the boundary (`from_row`); a table for st.dataframe or a line of CLI output is made
from these. A job's `spec` stays the JSON its row stores: the worker checks it once, when
it runs the job (db.jobs.check_spec), so a row that no longer checks (a workload gone
since) fails that job instead of every reader of the queue.

Frozen like SweepSpec: a claimed job is a snapshot of its row; the row moves on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from contract.json_shape import JsonObject


def _columns(cls: Any) -> frozenset[str]:
    # A row may hold more than the record (a column added later, a reader's label).
    return frozenset(f.name for f in fields(cls))


@dataclass(frozen=True)
class Job:
    """One row of the jobs table, plus `shown_status` where a reader decided it ("lost"
    for a running job gone silent: db/liveness.py)."""

    id: int
    status: str = "queued"
    spec: JsonObject = field(default_factory=dict)  # the row's JSON; checked when run
    device: str = "auto"
    target: str | None = None
    label: str | None = None
    cancel_requested: bool = False
    worker_id: int | None = None
    worker_name: str | None = None
    run_id: int | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None
    points_done: int = 0
    points_total: int | None = None
    current_point: str | None = None  # contract/point_text.describe's text
    message: str = ""
    executor: str = "local"
    gpu_type: str | None = None
    slurm_job_id: str | None = None
    session: str | None = None
    shown_status: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        return cls(**{k: v for k, v in row.items() if k in _columns(cls)})

    @property
    def shown(self) -> str:
        """The status a reader shows: shown_status where decided, else the stored one."""
        return self.shown_status or self.status

    @property
    def workload(self) -> str | None:
        return (self.spec or {}).get("workload")

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple((self.spec or {}).get("modes") or ())

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        return tuple((self.spec or {}).get("batch_sizes") or ())


# What a running job's message says while its worker waits for the host's timing lock
# (runner/core/host_gate.py), the holder named after it; the worker clears it once the
# lock is its own, and the job's verdict replaces it at the end (issue 46: a sweep
# waited 12 minutes for the lock and the Launch page said nothing of it).
LOCK_WAIT = "waiting for this host's timing lock"


def lock_wait_message(holder: str | None) -> str:
    """A running job's message while it waits for the lock; `holder` in words (None:
    the holder has not written who it is, e.g. a launchbench from before issue 46)."""
    return (f"{LOCK_WAIT}, held by {holder}" if holder else
            f"{LOCK_WAIT} (its holder did not say who it is)")


def waits_for_lock(job: Job) -> bool:
    # The shown status: a lost job's worker waits for nothing any more.
    return job.shown == "running" and (job.message or "").startswith(LOCK_WAIT)


@dataclass(frozen=True)
class Worker:
    """One row of the workers table; `id` 0 until registered (runner/ops/worker.py)."""

    id: int
    name: str
    hostname: str | None = None
    pid: int | None = None
    gpu_name: str | None = None
    has_cuda: bool = False
    torch_version: str | None = None
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    stopped_at: datetime | None = None
    # Where on its host it sits (db/hosts.py FIELDS): `worker --gpu N`, its host policy.
    host_slot: int | None = None
    host_policy: str | None = None
    cuda_visible_devices: str | None = None
    cpus: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Worker:
        return cls(**{k: v for k, v in row.items() if k in _columns(cls)})


@dataclass(frozen=True)
class JobProgress:
    """How far a job got at a given time: elapsed seconds and a linear estimate of the
    time left (None while unknown)."""

    elapsed_s: float | None
    remaining_s: float | None
    done: int = 0
    total: int | None = None
    fraction: float | None = None


__all__ = ["LOCK_WAIT", "Job", "JobProgress", "Worker", "lock_wait_message", "waits_for_lock"]
