"""`enqueue`, `jobs`, `cancel`, `worker`: the job queue from the command line.

`enqueue` takes `sweep`'s flags (parsed by the same functions) plus --target. A queued job
may only name a registered workload: whichever worker claims it runs it, so a user
factory (module:factory) stays a `sweep`-only thing. torch is imported by `worker` alone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys

from contract.catalog import WORKLOADS
from contract.queue import Job
from runner.ops import slurm
from runner.ops.cli import UsageError
from runner.ops.commands import flags, hosts
from runner.ops.commands import sweep as sweep_cmd


def register(sub) -> None:
    p = sub.add_parser("enqueue", help="queue a sweep for a worker; prints the job id",
                       description="Queue a sweep (same flags as `sweep`) for a worker to "
                                   "claim; prints the job id.",
                       parents=[
                           flags.workload_flags(
                               f"registered workload ({', '.join(WORKLOADS)})",
                               "default: the worker's (cuda when it has a GPU, else cpu)"),
                           flags.sweep_flags("comma-separated, e.g. 1,8,64 or 1,2,4,...,8192",
                                             "same as --timing quick"),
                           flags.db_flag()])
    p.add_argument("--target", metavar="NAME",
                   help="only a worker of this name or GPU name (e.g. 'NVIDIA H200') runs it")
    p.add_argument("--gpu-type", metavar="TYPE",
                   help="with LAUNCHBENCH_EXECUTOR=slurm: a GPU type from the Slurm config; "
                        "the job is submitted to a node of that type")
    p.set_defaults(func=run_enqueue)

    p = sub.add_parser("jobs", help="list queued, running and finished jobs",
                       description="One line per job, newest first.",
                       parents=[flags.db_flag()])
    p.add_argument("--limit", type=int, default=50, metavar="N", help="at most N (50)")
    p.set_defaults(func=run_jobs)

    p = sub.add_parser("cancel", help="cancel a queued or running job",
                       description="A queued job is cancelled at once; a running one stops "
                                   "after the point in flight, keeping finished points.",
                       parents=[flags.db_flag()])
    p.add_argument("job", metavar="JOB", help="job id (see `jobs`)")
    p.set_defaults(func=run_cancel)

    p = sub.add_parser("worker", help="claim and run queued jobs",
                       description="Register this host (GPU, torch), then claim queued jobs "
                                   "one at a time, run them, store each point as it "
                                   "finishes and heartbeat.",
                       parents=[hosts.host_flags(), flags.db_flag()])
    p.add_argument("--name", metavar="NAME", help="worker name jobs may --target "
                                                  "(default: host name)")
    p.add_argument("--once", action="store_true",
                   help="run at most one job, then exit (at once when none is queued)")
    p.add_argument("--job", metavar="ID",
                   help="run this queued job only, then exit (what a Slurm batch job runs); "
                        "a job no longer queued is not run again")
    p.add_argument("--check-target", action="store_true",
                   help="with --job: run it only if this worker serves its --target and "
                        "device, else leave it queued (what the dashboard starts)")
    p.add_argument("--idle-exit", type=float, metavar="SECONDS",
                   help="exit after this long without a job (default: run forever)")
    p.add_argument("--heartbeat", type=float, default=None, metavar="SECONDS",
                   help=argparse.SUPPRESS)  # tests: faster beats
    p.add_argument("--lost-after", type=float, default=None, metavar="SECONDS",
                   help=argparse.SUPPRESS)
    p.set_defaults(func=run_worker)


def _engine(url: str | None, *, must_exist: bool = False):
    from runner.ops.commands.store import open_engine

    return open_engine(url, must_exist=must_exist)


def _known(fn, *args):
    """db.jobs' own errors are bad input here: one line, exit 2."""
    from db.access import ReadOnlyError
    from db.jobs import JobFinished, JobNotFound, JobSpecError
    from runner.ops.slurm import SlurmError

    try:
        return fn(*args)
    except (JobSpecError, JobNotFound, JobFinished, ReadOnlyError, SlurmError) as e:
        raise UsageError(str(e)) from None


def run_enqueue(args: argparse.Namespace) -> int:
    from db import jobs
    from db.engine import default_url

    fields = {"workload": args.workload, "params": sweep_cmd.parse_params(args.param),
              "batch_sizes": list(sweep_cmd.parse_batch_sizes(args.batch_sizes)),
              "modes": list(sweep_cmd.parse_modes(args.modes)),
              "device": args.device or "auto", "timing": sweep_cmd.parse_timing(args),
              "label": sweep_cmd.parse_label(args.label)}
    target = None
    if args.target is not None:
        target = args.target.strip()
        if not target or len(target) > 200 or any(ord(c) < 32 for c in target):
            raise UsageError(f"--target {args.target!r} must be 1..200 printable characters")
    # Checked once, here, before the database: a bad flag writes nothing.
    spec = _known(jobs.check_spec, fields)
    config = _known(slurm.executor_config)
    if config is not None:
        if target is not None:
            raise UsageError("--target is for local workers; with the slurm executor "
                             "choose --gpu-type")
        if args.gpu_type is None:
            raise UsageError(f"--gpu-type is required with the slurm executor (configured: "
                             f"{', '.join(config.gpu_types)})")
        _known(config.gpu_type, args.gpu_type)
    elif args.gpu_type is not None:
        raise UsageError(f"--gpu-type {args.gpu_type!r} needs {slurm.EXECUTOR_VAR}=slurm")
    engine = _engine(args.db)
    try:
        queued = _known(lambda: slurm.queue_sweep(engine, spec, args.db or default_url(),
                                                  config, gpu_type=args.gpu_type,
                                                  target=target))
    finally:
        engine.dispose()
    if queued.slurm_job_id:
        print(f"job {queued.job_id} submitted as Slurm job {queued.slurm_job_id}",
              file=sys.stderr)
    print(queued.job_id)
    return 0


def _when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if t else "-"


def format_job(job: Job) -> str:
    total = job.points_total
    status = job.shown  # "lost" is decided at read time
    parts = [f"{job.id:>5}", f"{status:<9}", _when(job.created_at),
             job.spec.get("workload", "workload not recorded"), job.device,
             f"{job.points_done}/{total}" if total is not None else
             f"{job.points_done} points",
             f"target={job.target}" if job.target else "any",
             f"worker={job.worker_name}" if job.worker_name else "-",
             f"run={job.run_id}" if job.run_id else "-"]
    if job.slurm_job_id:
        parts.append(f"slurm={job.slurm_job_id}" + (f"({job.gpu_type})" if job.gpu_type
                                                     else ""))
    if job.label:
        parts.append(repr(job.label))
    if job.message:
        parts.append(f"({job.message})")
    return "  ".join(parts)


def run_jobs(args: argparse.Namespace) -> int:
    from db import jobs
    from db.access import read_only

    if not 1 <= args.limit <= 100_000:
        raise UsageError(f"--limit {args.limit} must be from 1 to 100000")
    engine = _engine(args.db, must_exist=True)  # listing must not leave an empty file
    try:
        if not read_only():  # a writer looking at the queue settles Slurm's verdicts
            slurm.reconcile(engine)
            jobs.reap_lost(engine)  # ...and persists what readers show as lost
        rows = jobs.list_jobs(engine, limit=args.limit)
    finally:
        engine.dispose()
    if not rows:
        print("no jobs", file=sys.stderr)
    for job in rows:
        print(format_job(job))
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    try:
        job_id = int(args.job)
        if job_id < 1:
            raise ValueError
    except ValueError:
        raise UsageError(f"job id {args.job!r} is not a positive whole number") from None
    engine = _engine(args.db, must_exist=True)
    try:
        status = _known(slurm.cancel, engine, job_id)  # plus scancel for a Slurm job
    finally:
        engine.dispose()
    print(f"job {job_id} cancelled" if status == "cancelled" else
          f"job {job_id} is running: it stops after the point in flight")
    return 0


@contextlib.contextmanager
def _sigterm_stops(worker):
    def handler(_signum, _frame):
        worker.stopping.set()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _remove_pid_file_at_exit() -> None:
    """The pid file the dashboard wrote for this worker (runner/ops/launcher.py) goes
    when it exits: a return, an exception, Ctrl-C or SIGTERM (an interrupt here)."""
    import atexit

    from runner.ops.launcher import PID_FILE_VAR, remove_pid_file

    path = os.environ.pop(PID_FILE_VAR, None)  # not inherited by what it starts
    if path:
        atexit.register(remove_pid_file, path, os.getpid())


def run_worker(args: argparse.Namespace) -> int:
    from db import jobs

    for flag, value in (("--idle-exit", args.idle_exit), ("--heartbeat", args.heartbeat),
                        ("--lost-after", args.lost_after)):
        if value is not None and not 0 <= value <= 7 * 24 * 3600:
            raise UsageError(f"{flag} {value:g} must be from 0 to 604800 seconds")
    if args.name is not None and (not args.name.strip() or len(args.name) > 200):
        raise UsageError(f"--name {args.name!r} must be 1..200 characters")
    job_id = None
    if args.job is not None:
        if not args.job.isdigit() or not 1 <= int(args.job) <= jobs.MAX_ID:
            raise UsageError(f"--job {args.job!r} is not a job id")
        job_id = int(args.job)
    if args.check_target and job_id is None:
        raise UsageError("--check-target needs --job ID: it says which job to check")
    from db.access import ReadOnlyError, require_writable

    try:  # before torch, the engine or a worker row: one line, nothing touched
        require_writable("run a worker (it claims jobs and writes runs)")
    except ReadOnlyError as e:
        raise UsageError(str(e)) from None
    _remove_pid_file_at_exit()
    placed = hosts.apply(args)  # pinned before torch is imported
    try:
        import torch  # noqa: F401 - a worker measures: fail here, before registering
    except ImportError:
        raise UsageError("worker needs torch, which is not installed here") from None
    from runner.ops.worker import WorkerLoop

    engine = _engine(args.db)
    slurm_job_id = os.environ.get("SLURM_JOB_ID") if job_id is not None else None

    def log(line: str) -> None:
        print(line, flush=True)

    def sweep_up() -> None:
        for ended, message in slurm.reconcile(engine):
            log(f"job {ended} ended: {message}")

    try:
        worker = WorkerLoop(engine, args.name and args.name.strip(),
                            heartbeat_s=args.heartbeat or jobs.HEARTBEAT_S,
                            lost_after_s=args.lost_after or jobs.LOST_AFTER_S, log=log,
                            # In a batch job, a SIGTERM is Slurm's (time limit, scancel).
                            interrupted=slurm.interrupted(engine) if slurm_job_id else None,
                            host=placed)
        hosts.announce(engine, worker.info, log)
        # `kill` stops a worker like Ctrl-C: the job in flight ends cancelled with its
        # finished points, the worker says goodbye, the exit status is 130. In a batch
        # job, Slurm's SIGTERM stops it between points instead (KillWait, 30 s by
        # default, is the grace; then SIGKILL, and reconcile settles the job).
        with (_sigterm_stops(worker) if slurm_job_id else sweep_cmd._sigterm_as_interrupt()):
            return worker.serve(once=args.once, idle_exit_s=args.idle_exit, job_id=job_id,
                                slurm_job_id=slurm_job_id, sweep_up=sweep_up,
                                check_target=args.check_target)
    finally:
        engine.dispose()
