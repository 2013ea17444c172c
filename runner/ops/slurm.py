"""Slurm as an executor for the job queue: the database stays the record, Slurm places work.

`LAUNCHBENCH_EXECUTOR=slurm` makes queueing a job also submit one batch job that runs
`python -m runner worker --once --job ID` on a node of the chosen GPU type. What a batch
job may ask for comes from the admin's config file (`$LAUNCHBENCH_SLURM_CONFIG`, else
`slurm.toml` beside app.py), never from the browser: partition, account, time limit,
extra sbatch flags and the GPU type table (type -> `--gres` and/or `--constraint`).

Bookkeeping:
- the Slurm job id is stored with the job (set at submission, and by the claiming worker
  from `SLURM_JOB_ID`, so a script submitted by hand is followed too);
- cancel also runs `scancel`;
- a batch job that ends without finishing its job (TIMEOUT, NODE_FAIL, cancelled from
  outside, a worker that died before claiming) fails the job with Slurm's reason, read
  by `reconcile` from `scontrol show job` once the batch job has ended (no sacct:
  clusters without slurmdbd have none). The worker cannot say it itself: while it runs,
  Slurm shows its job COMPLETING, the reason comes after. There is no daemon to run
  `reconcile`: it runs where lost workers are already reaped, by writers, just before
  the reaping (so Slurm's precise reason wins over "worker lost"): the Launch page every
  second while anyone watches it, every worker before it claims, and the `jobs`
  command. Slurm keeps an ended job for MinJobAge (300 s by default); a job purged
  before anyone looked fails as "gone" (or "worker lost").
- nothing runs twice: `worker --job` claims only a queued job (db.jobs.claim_job), so a
  requeued batch job finds its job running or ended and exits.

Standard library only at import (no torch, no SQLAlchemy): the Launch page, the CLI and
the worker all import it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.queue import Job

# The repository (runner/ops/slurm.py -> the folder holding app.py): the admin's slurm.toml
# lives there, and it is where `-m runner` resolves on the compute nodes.
ROOT = Path(__file__).resolve().parents[2]
EXECUTOR_VAR = "LAUNCHBENCH_EXECUTOR"
CONFIG_VAR = "LAUNCHBENCH_SLURM_CONFIG"
EXECUTORS = ("local", "slurm")
TIMEOUT_S = 30.0  # a Slurm client call; slurmctld answers in milliseconds when healthy
# Slurm states after which the batch job runs no more (a requeued one shows PENDING).
ENDED = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED",
                   "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
_TIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}|UNLIMITED|INFINITE")


class SlurmError(RuntimeError):
    """Bad Slurm configuration or input, or Slurm refusing: str() is one line."""


def executor() -> str:
    value = (os.environ.get(EXECUTOR_VAR) or "local").strip().lower()
    if value not in EXECUTORS:
        raise SlurmError(f"{EXECUTOR_VAR}={value!r} is not one of {', '.join(EXECUTORS)}")
    return value


# --- the admin's configuration ----------------------------------------------------------

@dataclass(frozen=True)
class GpuType:
    name: str
    gres: str | None = None  # e.g. gpu:v100:1
    constraint: str | None = None  # e.g. v100

    def flags(self) -> list[str]:
        return ([f"--gres={self.gres}"] if self.gres else []) + (
            [f"--constraint={self.constraint}"] if self.constraint else [])


@dataclass(frozen=True)
class SlurmConfig:
    gpu_types: dict[str, GpuType]
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    sbatch_flags: tuple[str, ...] = ()
    python: str = sys.executable  # the interpreter on the compute nodes
    workdir: str = str(ROOT)  # the checkout on the compute nodes (shared file system)
    source: str = field(default="", compare=False)

    def gpu_type(self, name: Any) -> GpuType:
        if isinstance(name, str) and name in self.gpu_types:
            return self.gpu_types[name]
        known = ", ".join(self.gpu_types) or "none"
        raise SlurmError(f"unknown GPU type {name!r}: the Slurm config offers {known}")


def _word(value: Any, what: str, source: str) -> str | None:
    """One sbatch word: no whitespace (an #SBATCH line splits on it), no control
    characters (a newline would start a line of shell in the script)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or any(c.isspace() or ord(c) < 32
                                                      for c in value):
        raise SlurmError(f"{source}: {what} {value!r} must be text without spaces")
    return value


def config_path() -> Path:
    return Path(os.environ.get(CONFIG_VAR) or ROOT / "slurm.toml")


def load_config(path: str | Path | None = None) -> SlurmConfig:
    import tomllib

    path = Path(path) if path else config_path()
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise SlurmError(f"no Slurm config at {path} (set {CONFIG_VAR}; see README, "
                         "'On a cluster')") from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SlurmError(f"Slurm config {path}: {str(e).splitlines()[0]}") from None
    src = str(path)
    known = {"partition", "account", "time_limit", "sbatch_flags", "python", "workdir",
             "gpu_types"}
    if set(raw) - known:
        raise SlurmError(f"{src}: unknown setting {sorted(set(raw) - known)[0]!r}")
    types: dict[str, GpuType] = {}
    table = raw.get("gpu_types") or {}
    if not isinstance(table, dict) or not table:
        raise SlurmError(f"{src}: [gpu_types] must name at least one GPU type")
    for name, t in table.items():
        if not _NAME.fullmatch(name) or not isinstance(t, dict) or set(t) - {"gres",
                                                                            "constraint"}:
            raise SlurmError(f"{src}: GPU type {name!r} must be a name with a table of "
                             "gres and/or constraint")
        gres = f"gpu:{name}:1" if t.get("gres") is True else t.get("gres")
        g = GpuType(name, _word(gres, f"{name}.gres", src),
                    _word(t.get("constraint"), f"{name}.constraint", src))
        if not g.gres and not g.constraint:
            raise SlurmError(f"{src}: GPU type {name!r} needs gres or constraint")
        types[name] = g
    time_limit = _word(raw.get("time_limit"), "time_limit", src)
    if time_limit and not _TIME.fullmatch(time_limit):
        raise SlurmError(f"{src}: time_limit {time_limit!r} is not a Slurm time "
                         "(minutes, [days-]hours:minutes:seconds)")
    flags = raw.get("sbatch_flags") or []
    if not isinstance(flags, list) or not all(
            _word(f, "sbatch flag", src) and f.startswith("-") for f in flags):
        raise SlurmError(f"{src}: sbatch_flags must be a list of flags such as "
                         "'--qos=bench'")
    for key in ("python", "workdir"):
        if key in raw and (not isinstance(raw[key], str) or "\n" in raw[key]):
            raise SlurmError(f"{src}: {key} must be a path")
    return SlurmConfig(
        gpu_types=types, partition=_word(raw.get("partition"), "partition", src),
        account=_word(raw.get("account"), "account", src), time_limit=time_limit,
        sbatch_flags=tuple(flags), python=raw.get("python") or sys.executable,
        workdir=raw.get("workdir") or str(ROOT), source=src)


# --- the batch script ---------------------------------------------------------------------

def script(job: Job, config: SlurmConfig) -> str:
    """The sbatch script for `job` (a db.jobs row). The database URL is not in it (it may
    hold a password, and Slurm keeps scripts readable): the worker reads LAUNCHBENCH_DB
    from the job's environment, which sbatch takes from the submitter's."""
    t = config.gpu_type(job.gpu_type)
    spec = job.spec or {}
    opts = [f"--job-name=launchbench-{job.id}"]
    opts += [f"--partition={config.partition}"] if config.partition else []
    opts += [f"--account={config.account}"] if config.account else []
    opts += [f"--time={config.time_limit}"] if config.time_limit else []
    opts += t.flags() + list(config.sbatch_flags)
    what = (f"{spec.get('workload', '?')}, {len(spec.get('batch_sizes') or [])} batch "
            f"size(s) x {len(spec.get('modes') or [])} mode(s), device "
            f"{spec.get('device', 'auto')}, GPU type {t.name}")
    worker = [config.python, "-m", "runner", "worker", "--once", "--job", str(job.id)]
    return "\n".join([
        "#!/bin/bash",
        *(f"#SBATCH {o}" for o in opts),
        f"# launchbench job {job.id}: {what}".replace("\n", " "),
        f"# Made by `python -m runner slurm-script {job.id}` from {config.source or '?'}.",
        "# Runs the job at most once: a requeued copy finds it claimed and exits.",
        'if [ -z "${LAUNCHBENCH_DB:-}" ]; then',
        '  echo "LAUNCHBENCH_DB is not set: export the shared database URL" >&2; exit 2',
        "fi",
        f"cd {shlex.quote(config.workdir)} || exit 2",
        "exec " + " ".join(shlex.quote(w) for w in worker),
        ""])


# --- talking to Slurm ---------------------------------------------------------------------

def _require(tool: str) -> None:
    if shutil.which(tool) is None:
        raise SlurmError(f"{tool} not found on PATH: this host is not a Slurm client "
                         f"(or set {EXECUTOR_VAR}=local)")


def _run(argv: list[str], *, stdin: str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    _require(argv[0])
    try:
        return subprocess.run(argv, input=stdin, text=True, capture_output=True,
                              timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]} did not answer within {TIMEOUT_S:g} s: is slurmctld "
                         "up?") from None
    except OSError as e:
        raise SlurmError(f"{argv[0]} could not run: {e}") from None


def _error(r: subprocess.CompletedProcess) -> str:
    """Slurm's own last words, without the 'sbatch: error:' prefixes."""
    lines = [ln.strip() for ln in (r.stderr or r.stdout or "").splitlines() if ln.strip()]
    last = lines[-1] if lines else f"exit status {r.returncode}"
    return re.sub(r"^(\S+: )?(error: )?(Batch job submission failed: )?", "", last)


def sbatch(text: str, db_url: str) -> str:
    """Submit a batch script; returns Slurm's job id."""
    from runner.ops.launcher import _absolute

    env = {k: v for k, v in os.environ.items() if k != "LAUNCHBENCH_READ_ONLY"}
    env["LAUNCHBENCH_DB"] = _absolute(db_url)
    r = _run(["sbatch", "--parsable"], stdin=text, env=env)
    if r.returncode != 0:
        raise SlurmError(f"Slurm refused the job: {_error(r)}")
    sid = r.stdout.strip().split(";")[0]
    if not sid.isdigit():
        raise SlurmError(f"sbatch printed {r.stdout.strip()[:80]!r}, not a job id")
    return sid


def scancel(slurm_job_id: str) -> None:
    r = _run(["scancel", slurm_job_id])
    if r.returncode != 0 and "Invalid job id" not in (r.stderr or ""):  # already gone: fine
        raise SlurmError(f"scancel {slurm_job_id} failed: {_error(r)}")


def show_job(slurm_job_id: str) -> dict[str, str] | None:
    """`scontrol show job -o ID` as a dict (JobState, Reason, ExitCode, StdOut, ...);
    None when Slurm no longer knows the job (purged after MinJobAge)."""
    r = _run(["scontrol", "show", "job", "-o", slurm_job_id])
    if r.returncode != 0:
        if "Invalid job id" in (r.stderr or ""):
            return None
        raise SlurmError(f"scontrol show job {slurm_job_id} failed: {_error(r)}")
    return dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)


def states(slurm_job_ids: list[str]) -> dict[str, str] | None:
    """One `squeue` call: job id -> state for those Slurm still knows. None when squeue
    gave no answer (the controller down, say): then nothing may be concluded."""
    if not slurm_job_ids:
        return {}
    r = _run(["squeue", "-h", "-t", "all", "-j", ",".join(slurm_job_ids), "-o", "%i|%T"])
    if r.returncode != 0:
        # A single unknown id is an error to squeue; it is an answer here: gone.
        return {} if len(slurm_job_ids) == 1 and "Invalid job id" in r.stderr else None
    out = {}
    for line in r.stdout.splitlines():
        sid, _, state = line.strip().partition("|")
        out[sid] = state
    return out


def verdict(slurm_job_id: str, info: dict[str, str] | None) -> str:
    """One line saying how a batch job ended, in Slurm's words."""
    if info is None:
        return (f"Slurm job {slurm_job_id} is gone (Slurm kept no record of how it "
                "ended): it did not finish this job")
    state = info.get("JobState", "?")
    reason = info.get("Reason")
    text = f"Slurm job {slurm_job_id} ended {state}"
    if reason and reason != "None":
        text += f" ({reason})"
    if info.get("ExitCode") not in (None, "0:0"):
        text += f", exit code {info['ExitCode']}"
    if info.get("StdOut"):
        text += f"; its output: {info['StdOut']}"
    return text


# --- the executor's operations -------------------------------------------------------------

def submit(engine, spec: Any, gpu_type: str | None, db_url: str,
           config: SlurmConfig | None = None, *, session: str | None = None,
           memory_bytes: int | None = None) -> tuple[int, str]:
    """Queue `spec` for a node of `gpu_type` and submit its batch job: (job id, Slurm job
    id). A refusal (unknown type, a partition Slurm refuses, no sbatch) raises SlurmError
    and leaves no job behind. `session`, `memory_bytes`: the queue's bounds (jobs.enqueue)."""
    from db import jobs

    config = config or load_config()
    config.gpu_type(gpu_type)  # before anything is written (None is refused there)
    _require("sbatch")
    job_id = jobs.enqueue(engine, spec, executor="slurm", gpu_type=gpu_type,
                          session=session, memory_bytes=memory_bytes)
    try:
        sid = sbatch(script(jobs.get_job(engine, job_id), config), db_url)
    except BaseException:
        jobs.withdraw(engine, job_id)
        raise
    jobs.set_slurm_job(engine, job_id, sid)
    return job_id, sid


def executor_config() -> SlurmConfig | None:
    """The Slurm settings when the slurm executor is configured (the admin's environment
    and config file, never the browser's), else None; SlurmError when misconfigured."""
    return load_config() if executor() == "slurm" else None


@dataclass(frozen=True)
class Queued:
    job_id: int
    slurm_job_id: str | None = None  # the batch job submitted for it (slurm executor)
    worker_pid: int | None = None  # the local worker started for it (start_worker)


def queue_sweep(engine, spec, db_url: str, config: SlurmConfig | None, *,
                gpu_type: str | None = None, target: str | None = None,
                session: str | None = None, memory_bytes: int | None = None,
                start_worker: bool = False) -> Queued:
    """The one queue entry (the Launch page, `runner enqueue`): with a Slurm `config`
    (executor_config()), a batch job on a node of `gpu_type` (submit); else a job for any
    local worker (of `target`'s name or GPU, if given), and with `start_worker` one started
    on this machine when no live worker serves it (runner/ops/launcher.py). `spec`: a
    SweepSpec checked where it entered, or its fields as a dict (checked by jobs.enqueue).
    `session`, `memory_bytes`: the queue's bounds (jobs.enqueue)."""
    from db import jobs
    from runner.ops.launcher import ensure_local_worker

    if config is not None:
        job_id, sid = submit(engine, spec, gpu_type, db_url, config, session=session,
                             memory_bytes=memory_bytes)
        return Queued(job_id, slurm_job_id=sid)
    job_id = jobs.enqueue(engine, spec, target, session=session, memory_bytes=memory_bytes)
    pid = ensure_local_worker(engine, jobs.get_job(engine, job_id), db_url) \
        if start_worker else None
    return Queued(job_id, worker_pid=pid)


def cancel(engine, job_id: int) -> str:
    """db.jobs.cancel, plus scancel for a job with a batch job. Returns its status."""
    from db import jobs

    status = jobs.cancel(engine, job_id)
    sid = jobs.get_job(engine, job_id).slurm_job_id
    if sid:
        try:
            scancel(sid)
        except SlurmError as e:
            raise SlurmError(f"job {job_id} is {status}, but {e}") from None
    return status


def reconcile(engine) -> list[tuple[int, str]]:
    """Fail queued or running jobs whose batch job ended without finishing them; returns
    (job id, message) for each. Quiet no-op without Slurm jobs in flight or without
    Slurm clients here; a Slurm that does not answer changes nothing."""
    from db import jobs

    # Jobs with a batch job only (the query's filter; the record types the id optional).
    rows = [(r, r.slurm_job_id) for r in jobs.slurm_jobs_in_flight(engine) if r.slurm_job_id]
    if not rows or shutil.which("squeue") is None:
        return []
    try:
        alive = states(sorted({sid for _, sid in rows}))
    except SlurmError:
        return []
    if alive is None:
        return []
    ended = []
    for r, sid in rows:
        state = alive.get(sid)
        if state is not None and state not in ENDED:
            continue  # pending, running, completing, requeued: Slurm is still on it
        try:
            info = show_job(sid) if state is not None else None
        except SlurmError:
            continue
        message = verdict(sid, info)
        # Cancelled here (the job asked to stop, then scancel): that is what it was.
        status = "cancelled" if r.cancel_requested else "failed"
        if jobs.end_unfinished(engine, r.id, status, message):
            ended.append((r.id, message))
    return ended


def interrupted(engine):
    """For WorkerLoop(interrupted=...) in a batch job, where a SIGTERM is Slurm ending it.
    Cancelled through the queue (then scancel): the job ends cancelled at once. Anything
    else (time limit, an outside scancel): the job is left as it is, because Slurm says
    why only once the batch job has ended (while the worker runs it shows COMPLETING);
    `reconcile` then fails it with that reason."""
    from db import jobs

    def decide(job_id: int) -> tuple[str, str] | None:
        try:
            if jobs.get_job(engine, job_id).cancel_requested:
                return "cancelled", "cancelled (scancel)"
        except Exception:  # noqa: BLE001 - the database gone too: reconcile settles it
            pass
        return None

    return decide


def queue_state(config: SlurmConfig) -> dict[str, str]:
    """GPU type -> 'n running, m pending' over every job in the queue that asks for that
    type (its gres or constraint), from one `squeue` call; on failure each says why."""
    argv = ["squeue", "-h", "-t", "PENDING,RUNNING", "-o", "%T|%b|%f"]
    if config.partition:
        argv[1:1] = ["-p", config.partition]
    try:
        r = _run(argv)
        if r.returncode != 0:
            raise SlurmError(_error(r))
    except SlurmError as e:
        return {name: f"queue unknown: {e}" for name in config.gpu_types}
    counts = {name: {"RUNNING": 0, "PENDING": 0} for name in config.gpu_types}
    for line in r.stdout.splitlines():
        state, gres, features = (line.split("|") + ["", ""])[:3]
        for t in config.gpu_types.values():
            kind = re.sub(r":\d+$", "", t.gres or "")  # gpu:v100:1 asks for gpu:v100
            asks = (kind and re.search(rf"(^|[:/,]){re.escape(kind)}(:|,|$)", gres)) or (
                t.constraint and t.constraint in re.split(r"[&|,\[\]()*]", features))
            if asks and state in counts[t.name]:
                counts[t.name][state] += 1
    return {n: f"{c['RUNNING']} running, {c['PENDING']} pending" for n, c in counts.items()}
