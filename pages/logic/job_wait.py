"""What a job on the Launch page waits for, in one line (issue 46): its place in the
queue and the worker it needs, or, running, the host's timing lock and who holds it.

A CPU sweep waited 12 minutes for the host's timing lock held by another process while
the page said only "timing (the modes' rounds, interleaved)" and "0 of 4 points
measured": the wait was the answer, and the page did not give it. The lock wait comes
from the job's message, which its worker writes while it waits (runner/ops/worker.py,
contract/queue.py LOCK_WAIT); the rest from the queue's rows and the live workers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from contract.queue import Job, Worker, waits_for_lock
from pages.logic.launch_estimate import format_seconds

# The holder's start as the worker wrote it (runner/core/host_gate.py Holder.text).
_SINCE = re.compile(r"since (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC")


def _held_for(message: str, now: datetime | None) -> str:
    """' (held 12m 04s so far)' from the holder's start in the message and `now` (the
    database's clock); '' where either is missing."""
    m = _SINCE.search(message)
    if m is None or now is None:
        return ""
    since = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    seconds = (now - since).total_seconds()
    return f" (held {format_seconds(seconds)} so far)" if seconds >= 0 else ""


def _names(workers: Sequence[Worker]) -> str:
    return ", ".join(sorted({w.name for w in workers}))


def waiting_for(job: Job, ahead: int, running: Sequence[Job], workers: Sequence[Worker],
                can_serve: Callable[[Worker, Job], bool],
                starting: int | None = None, now: datetime | None = None) -> str | None:
    """The one line, or None when the job waits for nothing (it is measuring, or it
    ended). `ahead`: queued jobs before it (db.jobs.queue_place), `running`: the jobs
    running now, `workers`: the live ones, `can_serve`: the queue's matching rule,
    `starting`: the pid of the worker Launch started on this machine, while it lives
    (it registers once torch is imported: seconds), `now`: the database's clock, for how
    long the lock's holder has held it."""
    if waits_for_lock(job):
        return ("Waiting for " + job.message.removeprefix("waiting for ")
                + _held_for(job.message, now)
                + ". Its points are timed once the holder's timing section ends.")
    if job.shown != "queued":
        return None
    place = (f"{ahead} job(s) queued before it, taken first; " if ahead else
             "First in the queue; ")
    if job.executor == "slurm":
        batch = f"Slurm job {job.slurm_job_id}" if job.slurm_job_id else "its Slurm job"
        return f"{place}waiting for {batch} to start on a {job.gpu_type or 'GPU'} node."
    able = [w for w in workers if can_serve(w, job)]
    if not able and starting is not None:
        return (f"{place}waiting for the worker started on this machine (pid {starting}) "
                "to start up and claim it.")
    if not able:
        want = (f" serves target {job.target!r}" if job.target else
                " has CUDA" if job.device == "cuda" else "")
        return (f"{place}waiting for a worker to claim it: no live worker{want} "
                "(start python -m runner worker where it can run).")
    busy = {j.worker_name: j.id for j in running if j.worker_name}
    free = [w for w in able if w.name not in busy]
    if free:
        return f"{place}waiting for a worker to claim it ({_names(free)} can, within a second)."
    jobs = ", ".join(f"{w.name} runs job {busy[w.name]}" for w in able)
    return f"{place}waiting for a worker to claim it: {jobs}."
