"""The worker: claims queued jobs one at a time, runs each as a sweep, heartbeats.

torch is imported only when a worker starts (identity) or runs a job, never at import.
Starting one from the dashboard is runner/ops/launcher.py's.
"""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

from contract.measurement import Measurement
from contract.point_text import describe
from contract.queue import Job, Worker, lock_wait_message
from contract.run_record import Environment, Run
from db import jobs

POLL_S = 1.0
# A result write that meets a database outage is tried again after each of these pauses
# (about 3 minutes in all, past a PostgreSQL restart), then given up: the measured
# points are then kept in a bundle file (UNSENT_DIR) to import once the database is back.
RETRY_DELAYS_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 30.0, 30.0, 30.0, 30.0)
UNSENT_DIR = "LAUNCHBENCH_UNSENT_DIR"  # environment: where such bundles go (default: cwd)


def _outage(e: BaseException) -> bool:
    """A database that is away (restarting, connection killed, file locked), not one
    refusing the value: only the first is worth waiting for."""
    return isinstance(e, (OperationalError, InterfaceError)) or bool(
        getattr(e, "connection_invalidated", False))


def retrying(call: Callable[[], Any], what: str, *, log: Callable[[str], None],
             sleep: Callable[[float], None] = time.sleep,
             delays: tuple[float, ...] = RETRY_DELAYS_S, idempotent: bool = False) -> Any:
    """`call()`, tried again through a database outage with bounded back-off.

    `idempotent`: a retried insert that meets its own row (the first try committed but
    its answer was lost with the connection) counts as done."""
    for attempt, delay in enumerate((*delays, None)):
        try:
            return call()
        except IntegrityError:
            if idempotent and attempt:
                return None
            raise
        except DBAPIError as e:
            if delay is None or not _outage(e):
                raise
            first = (str(e.orig or e).strip().splitlines() or ["?"])[0]
            log(f"{what}: database unavailable ({first}); trying again in {delay:g} s")
            sleep(delay)
    raise AssertionError("unreachable")


def identity(name: str | None = None) -> tuple[Worker, int | None]:
    """This process as a worker, not registered yet (id 0): what claim_next matches jobs
    against (GPU name, whether CUDA is there); and its GPU's memory in bytes, what a job's
    memory bound is checked against here (None: the default's)."""
    import torch

    has_cuda = torch.cuda.is_available()
    hostname = socket.gethostname()
    me = Worker(id=0, name=name or hostname, hostname=hostname, pid=os.getpid(),
                has_cuda=has_cuda,
                gpu_name=torch.cuda.get_device_name(0) if has_cuda else None,
                torch_version=torch.__version__)
    return me, (torch.cuda.get_device_properties(0).total_memory if has_cuda else None)


class _JobSink:
    """The database sink, plus the job -> run link as soon as the run row exists. Every
    write is retried through an outage (retrying); a copy in memory keeps what was
    measured for a bundle file should the database stay away."""

    def __init__(self, engine, job_id: int, retry: Callable[..., Any]) -> None:
        from runner.ops.sinks import DbSink, MemorySink

        self.engine, self.job_id, self.db = engine, job_id, DbSink(engine)
        self.memory, self._retry_with, self.down = MemorySink(), retry, False

    def retry(self, call: Callable[[], Any], what: str, **kw: Any) -> Any:
        """Through an outage, once: after one write gave up, the next try is the only
        one (run_sweep's and the worker's clean-up must not each wait it out again)."""
        try:
            return self._retry_with(call, what, **({"delays": ()} if self.down else {}),
                                    **kw)
        except DBAPIError as e:
            self.down = self.down or _outage(e)
            raise

    def start(self, environment: Environment, run: Run) -> None:
        self.memory.start(environment, run)
        if self.db.run_id is None:
            self.retry(lambda: self.db.start(environment, run), "storing the run")
        self.retry(self._link, "linking the run")

    def _link(self) -> None:
        assert self.db.run_id is not None  # db.start stored the run, or it raised
        jobs.link_run(self.engine, self.job_id, self.db.run_id)

    def point(self, measurement: Measurement) -> None:
        self.memory.point(measurement)
        self.retry(lambda: self.db.point(measurement), "storing a point", idempotent=True)

    def update(self, measurement: Measurement) -> None:
        self.memory.update(measurement)
        # A replace in one transaction: trying it again after an outage is harmless.
        self.retry(lambda: self.db.update(measurement), "updating a point")

    def finish(self, status: str) -> None:
        if self.memory.status is None:  # the sweep's own verdict, not a clean-up's
            self.memory.finish(status)
        self.retry(lambda: self.db.finish(status), "finishing the run")

    def keep_unsent(self) -> str | None:
        """Write what was measured as a bundle file; its path, or None if nothing ran."""
        from contract import bundle as fmt

        run = self.memory.run
        if not self.memory.started or run is None:  # started: the run is set
            return None
        path = os.path.join(os.environ.get(UNSENT_DIR) or os.getcwd(),
                            f"launchbench-job-{self.job_id}-{run.uuid}.json")
        fmt.write(path, self.memory.bundle())
        return path


class _Heartbeat(threading.Thread):
    """Beats every `every_s` in the background, so a long point (a compile) does not make
    the worker look lost; remembers when its job was asked to stop."""

    def __init__(self, engine, worker_id: int, every_s: float) -> None:
        super().__init__(daemon=True, name="launchbench-heartbeat")
        self.engine, self.worker_id, self.every_s = engine, worker_id, every_s
        self.job_id: int | None = None
        # The job told to stop. An id, not a flag: a beat for a job that just ended (not
        # running any more, so "stop") must not stop the next one.
        self.stopped_job: int | None = None
        self._done = threading.Event()

    def beat(self, progress: tuple[int, int, str | None] | None = None) -> None:
        job_id = self.job_id
        if jobs.heartbeat(self.engine, self.worker_id, job_id, progress=progress) and job_id:
            self.stopped_job = job_id

    def run(self) -> None:
        while not self._done.wait(self.every_s):
            try:
                self.beat()
            except Exception as e:  # noqa: BLE001 - a database hiccup: try again next beat
                print(f"heartbeat failed: {str(e).splitlines()[0]}", file=sys.stderr)

    def close(self) -> None:
        self._done.set()


class WorkerLoop:
    """A worker's loop in this process: claim, run, heartbeat. Its row's record is
    `self.info` (contract/queue.py Worker); the table model is db.models.WorkerRow."""

    def __init__(self, engine, name: str | None = None, *, heartbeat_s: float =
                 jobs.HEARTBEAT_S, lost_after_s: float = jobs.LOST_AFTER_S,
                 poll_s: float = POLL_S, log: Callable[[str], None] = print,
                 interrupted: Callable[[int], tuple[str, str] | None] | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 host: Mapping[str, Any] | None = None) -> None:
        self.engine, self.log, self.sleep = engine, log, sleep
        # What an interrupt (SIGTERM, Ctrl-C) means for the job in flight: (status,
        # message), or None to leave the job to its executor's verdict: under Slurm the
        # reason (TIMEOUT, an outside scancel) is known only once the batch job has ended
        # (runner/ops/slurm.py: interrupted, reconcile).
        self.interrupted = interrupted or (lambda _job_id: ("cancelled", "worker interrupted"))
        # Set (by a signal handler) to stop the job in flight between points, as cleanly
        # as a cancel: a batch job's SIGTERM must not land inside a database call.
        self.stopping = threading.Event()
        self.heartbeat_s, self.lost_after_s, self.poll_s = heartbeat_s, lost_after_s, poll_s
        me, self.gpu_memory_bytes = identity(name)
        # `host`: slot, policy, GPUs and CPUs on a shared host (runner/ops/host.py pin):
        # register_worker's keyword arguments, checked there (db/hosts.py check_fields).
        host = dict(host or {})
        wid = jobs.register_worker(
            engine, name=me.name, hostname=me.hostname, pid=me.pid, gpu_name=me.gpu_name,
            has_cuda=me.has_cuda, torch_version=me.torch_version, **host)
        self.info: Worker = replace(me, id=wid, **host)

    def serve(self, *, once: bool = False, idle_exit_s: float | None = None,
              job_id: int | None = None, slurm_job_id: str | None = None,
              sweep_up: Callable[[], None] | None = None, check_target: bool = False
              ) -> int:
        """Claim and run jobs until there are none (`once`: after one job, or at once
        when the queue is empty) or the queue stayed empty for `idle_exit_s`.

        `job_id`: run that one job and exit (what a Slurm batch job does); 0 when it was
        run or was no longer queued (a requeued batch job must not run it twice), 2 when
        it does not exist. `sweep_up`: called before reap_lost, before each claim.
        `check_target`: with `job_id`, run it only if this worker serves its target and
        device (a worker the dashboard starts for a job), else leave it queued."""
        if job_id is not None:
            return self._serve_one(job_id, slurm_job_id, sweep_up, check_target)
        beat = _Heartbeat(self.engine, self.info.id, self.heartbeat_s)
        beat.start()
        gpu = self.info.gpu_name or "no CUDA"
        self.log(f"worker {self.info.name} (id {self.info.id}) on "
                 f"{self.info.hostname}: {gpu}, torch {self.info.torch_version}")
        idle_since = time.monotonic()
        try:
            while True:
                try:
                    # Every worker sweeps up after lost ones: no separate janitor to run.
                    if sweep_up is not None:  # first: an executor's reason beats "lost"
                        sweep_up()
                    for lost in jobs.reap_lost(self.engine, self.lost_after_s):
                        self.log(f"job {lost} failed: worker lost")
                    job = jobs.claim_next(self.engine, self.info)
                except DBAPIError as e:  # the shared database restarting: wait it out
                    self.log(f"database unavailable: {str(e.orig).strip().splitlines()[0]}")
                    time.sleep(self.poll_s)
                    continue
                if job is None:
                    if once or (idle_exit_s is not None
                                and time.monotonic() - idle_since >= idle_exit_s):
                        return 0
                    time.sleep(self.poll_s)
                    continue
                self.run_job(job, beat)
                if once:
                    return 0
                if _context_lost():  # every later job would fail here: let a fresh one run
                    self.log(f"CUDA context lost ({_context_lost()}): worker exits")
                    return 1
                idle_since = time.monotonic()
        except KeyboardInterrupt:
            return 130
        finally:
            beat.close()
            jobs.stop_worker(self.engine, self.info.id)

    def _serve_one(self, job_id: int, slurm_job_id: str | None,
                   sweep_up: Callable[[], None] | None, check_target: bool = False) -> int:
        beat = _Heartbeat(self.engine, self.info.id, self.heartbeat_s)
        beat.start()
        try:
            if sweep_up is not None:
                sweep_up()
            jobs.reap_lost(self.engine, self.lost_after_s)
            if check_target and not self._serves(job_id):
                return 0
            job = jobs.claim_job(self.engine, self.info, job_id, slurm_job_id)
            if job is None:
                try:
                    seen = jobs.get_job(self.engine, job_id)
                except jobs.JobNotFound:
                    self.log(f"job {job_id} does not exist: nothing to run")
                    return 2
                by = f" by {seen.worker_name}" if seen.worker_name else ""
                self.log(f"job {job_id} is {seen.status}{by}, not queued: refusing to "
                         "claim it again (it runs at most once)")
                return 0
            self.run_job(job, beat)
            return 0
        except KeyboardInterrupt:
            return 130
        finally:
            beat.close()
            jobs.stop_worker(self.engine, self.info.id)

    def _serves(self, job_id: int) -> bool:
        """Whether this worker may run job `job_id` by the rule claim_next applies; says
        why not. A job this host cannot serve stays queued for a worker that can."""
        try:
            job = jobs.get_job(self.engine, job_id)
        except jobs.JobNotFound:
            return True  # claim_job's path says so in its own words
        if jobs.can_serve(self.info, job):
            return True
        self.log(f"job {job_id} wants target {job.target!r}, device "
                 f"{job.device!r}; this worker ({self.info.name}, "
                 f"{self.info.gpu_name or 'no CUDA'}) does not serve it: left queued")
        return False

    def run_job(self, job: Job, beat: _Heartbeat) -> str:
        from runner.core.sweep import prepare, run_sweep

        job_id = job.id
        self.log(f"claimed job {job_id}")
        beat.job_id = job_id
        sink = _JobSink(self.engine, job_id, self._retry)
        status, message, crashed, spec, interrupted = "failed", "", False, None, False
        try:
            # The row may come from anywhere: it enters here, checked once, its memory
            # against this GPU's; then what it needs of this machine.
            spec = jobs.check_spec(job.spec, self.gpu_memory_bytes)
            if spec.device == "auto":
                spec = replace(spec, device="cuda" if self.info.has_cuda else "cpu")
            workload = prepare(spec, allow_import=False)

            def progress(done: int, total: int, current, _last) -> None:
                point = describe(current)
                point = point[:100] if point else None  # the jobs table keeps 100
                beat.beat((done, total, point))

            def should_stop() -> bool:
                if self.stopping.is_set():
                    return True
                beat.beat()  # a fresh look at the cancel flag between points
                return beat.stopped_job == job_id

            with self._lock_waits_told(job_id):
                status = run_sweep(spec, sink, progress=progress, should_stop=should_stop,
                                   command=spec.command(), workload=workload)
            if status == "cancelled" and beat.stopped_job != job_id:
                # run_sweep took a Ctrl-C / SIGTERM meant for the worker: stop it too.
                interrupted = True
                verdict = self.interrupted(job_id)
                if verdict is None:
                    self.log(f"job {job_id} interrupted: left to the executor's verdict")
                    raise KeyboardInterrupt
                status, message = verdict
            elif status == "cancelled":
                message = "cancelled between points"
        except KeyboardInterrupt:
            verdict = None if interrupted else self.interrupted(job_id)
            if verdict is not None:
                self._end(job_id, sink, *verdict, crashed=True)
            raise
        except Exception as e:  # noqa: BLE001 - any failure ends this job, not the worker
            status, message = "failed", f"{type(e).__name__}: {str(e).strip()[:500]}"
            crashed = True
        finally:
            beat.job_id = None
        self._end(job_id, sink, status, message, crashed)
        self._settle(spec.device if spec is not None else "cpu")
        run = sink.db.run_id
        self.log(f"job {job_id} {status}" + (f": run {run}" if run else "")
                 + (f" ({message})" if message else ""))
        if interrupted:
            raise KeyboardInterrupt
        return status

    @contextlib.contextmanager
    def _lock_waits_told(self, job_id: int) -> Iterator[None]:
        """While the job runs, a wait for the host's timing lock is on the job's message
        with who holds it (runner/core/host_gate.py), cleared once the lock is taken: the
        Launch page says what the job waits for, not only its phase (issue 46)."""
        from runner.core import host_gate

        gate = host_gate.current()
        if not isinstance(gate, host_gate.Gate):
            yield
            return

        def told(waiting: bool, holder: host_gate.Holder | None) -> None:
            jobs.note(self.engine, job_id, lock_wait_message(
                holder.text() if holder is not None else None) if waiting else "")

        gate.job, gate.on_wait = job_id, told
        try:
            yield
        finally:
            gate.job, gate.on_wait = None, None

    @staticmethod
    def _settle(device: str) -> None:
        """After a job: drop its compiled state, then freeze what is left (torch, Dynamo
        and every module the job loaded, all living as long as the process), so the
        collector stops rescanning it at each point's reset: gc.collect there drops from
        ~0.1 s to milliseconds. The next job's garbage is created after the freeze and is
        collected as usual; nothing a job leaves behind is frozen, the reset freed it."""
        from runner.core.point import reset_state

        reset_state(device)
        gc.freeze()

    def _retry(self, call: Callable[[], Any], what: str, **kw: Any) -> Any:
        return retrying(call, what, log=self.log, sleep=self.sleep, **kw)

    def _end(self, job_id: int, sink: _JobSink, status: str, message: str,
             crashed: bool = False) -> None:
        """Record the job's verdict (and its run's, if run_sweep could not), retried
        through an outage; if the database stays away, keep the points in a file."""
        try:
            if crashed and sink.db.run_id is not None:
                try:  # run_sweep finishes its run itself, unless it raised before it could
                    sink.finish(status)
                except Exception:  # noqa: BLE001 - the job's own status below still tells
                    pass
            # Through the sink's retry: once the database was given up on, one try only.
            sink.retry(lambda: jobs.finish(self.engine, job_id, status, message),
                       f"ending job {job_id}")
        except DBAPIError as e:
            why = (str(e.orig or e).strip().splitlines() or ["?"])[0]
            try:
                path = sink.keep_unsent()
                kept = f"; its points are kept in {path} (runner import)" if path else ""
            except OSError as oe:
                kept = f"; its points could not be kept either: {oe}"
            self.log(f"job {job_id} {status} but the database stayed unavailable: "
                     f"{why}{kept}")
        finally:
            sink.db.close()


def _context_lost() -> str | None:
    from runner.core.cuda_fatal import lost_here

    return lost_here()
