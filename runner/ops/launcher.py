"""Starting a local worker from the dashboard: the one operations entry pages import.

Imports the queue (db/) and the standard library only, so the Launch page never pulls in
the CLI, the worker loop or torch; the process it starts is `python -m runner worker`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from contract.queue import Job
from db import jobs

ROOT = Path(__file__).resolve().parents[2]  # the repository: where `-m runner` resolves


def _absolute(db_url: str) -> str:
    """A relative SQLite path made absolute: the worker must open the dashboard's file
    whatever directory either was started from."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database and not os.path.isabs(url.database):
        return url.set(database=os.path.abspath(url.database)).render_as_string(
            hide_password=False)
    return db_url


def _state_path(db_url: str, suffix: str) -> Path:
    db_url = _absolute(db_url)
    key = hashlib.sha256(db_url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"launchbench-worker-{key}.{suffix}"


def _alive(pid: int) -> bool:
    """Is `pid` a running (not zombie) worker process of ours?"""
    proc = Path(f"/proc/{pid}")
    if proc.exists():
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X") and b"runner" in cmdline and b"worker" in cmdline
    try:
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return sys.platform != "linux"


# The workers started here, until each is reaped: a thread per worker waits on it, so
# its exit status is collected the moment its job ends. Polled only on the next launch,
# a finished worker stayed a zombie (<defunct> in ps) until then or until the dashboard
# stopped.
_spawned: dict[int, subprocess.Popen] = {}


# The environment that names the pid file to the worker: it removes the file as it exits
# (runner/ops/commands/jobs.py), so no marker outlives its worker, even with the
# dashboard gone; the dashboard removes it too once it has reaped the worker.
PID_FILE_VAR = "LAUNCHBENCH_WORKER_PID_FILE"


def remove_pid_file(path: str | os.PathLike, pid: int) -> bool:
    """Remove `path` if it names `pid` (a later worker's file is left alone); whether it
    was removed."""
    try:
        if Path(path).read_text().strip() != str(pid):
            return False
        Path(path).unlink()
    except OSError:
        return False
    return True


def _reap(proc: subprocess.Popen, pid_file: Path) -> None:
    proc.wait()
    _spawned.pop(proc.pid, None)
    remove_pid_file(pid_file, proc.pid)


def local_device() -> str | None:
    """What a worker started here would measure on: 'cpu' where no NVIDIA driver is
    loaded, the GPU model its driver names (one model on the host), else None (several
    models, or none that can start: no torch). Read from /proc, as `torch.cuda.
    get_device_name` reports it, since the dashboard never imports torch."""
    if importlib.util.find_spec("torch") is None:
        return None
    infos = sorted(Path("/proc/driver/nvidia/gpus").glob("*/information"))
    if not infos:
        return None if Path("/dev/nvidiactl").exists() else "cpu"
    models = set()
    for info in infos:
        try:
            text = info.read_text()
        except OSError:
            return None
        models |= {line.split(":", 1)[1].strip() for line in text.splitlines()
                   if line.startswith("Model:")}
    return models.pop() if len(models) == 1 else None


def local_worker_pid(db_url: str) -> int | None:
    """The pid of the worker ensure_local_worker last started for `db_url`, if alive."""
    try:
        pid = int(_state_path(db_url, "pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def ensure_local_worker(engine, job: Job, db_url: str) -> int | None:
    """Start `python -m runner worker --job ID --check-target` on this machine unless a
    live worker can serve `job`. Returns the new pid, or None.

    The worker takes this job and nothing else: a worker started for a job whose target
    no one serves once took another queued job instead (a whole 56-point sweep). When
    this host does not serve the job's target either, it leaves the job queued and exits.
    The process runs in its own session, so it outlives the browser session, page reruns
    and even a restart of the dashboard; it exits when its job ends."""
    from db.access import require_writable

    require_writable("start a worker")
    if any(jobs.can_serve(w, job) for w in jobs.live_workers(engine)):
        return None
    if importlib.util.find_spec("torch") is None:
        return None  # a dashboard-only host: the job waits for a GPU host's worker
    env = {k: v for k, v in os.environ.items() if k != "LAUNCHBENCH_READ_ONLY"}
    env["LAUNCHBENCH_DB"] = _absolute(db_url)  # not on the command line: ps would show a password
    pid_file = _state_path(db_url, "pid")
    env[PID_FILE_VAR] = str(pid_file)
    with open(_state_path(db_url, "log"), "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "worker", "--job", str(int(job.id)),
             "--check-target"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
    _spawned[proc.pid] = proc
    # Written before the reaper starts: a worker that ends at once still has it removed.
    pid_file.write_text(str(proc.pid))
    threading.Thread(target=_reap, args=(proc, pid_file), name=f"reap-worker-{proc.pid}",
                     daemon=True).start()
    return proc.pid
