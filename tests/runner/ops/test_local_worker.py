"""The worker the dashboard starts for a job (issue 29, item 7) takes that job and nothing
else: not an older queued job, and, when this host does not serve the job's target, not
the job either (it stays queued for a worker that does). Real worker processes, each in
its own session with its own timing-lock directory, killed at teardown."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from db import jobs
from db.engine import make_engine
from runner.ops import launcher

TINY = {"workload": "mlp", "params": {"depth": "1", "width": "4"}, "batch_sizes": [1],
        "modes": ["eager"], "device": "cpu", "timing": "quick"}


@pytest.fixture
def setup(sqlite_url, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    # The worker inherits the environment: a timing lock of its own, never the host's.
    monkeypatch.setenv("LAUNCHBENCH_HOST_DIR", str(tmp_path / "host-lock"))
    # The launcher keeps its pid and log files in the temp dir: this test's own.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY", raising=False)
    engine = make_engine(sqlite_url)
    started: list[int] = []
    yield engine, sqlite_url, started
    for pid in started:
        try:
            os.killpg(pid, signal.SIGKILL)  # its own session: the group is the worker's
        except ProcessLookupError:
            pass
    for proc in list(launcher._spawned.values()):
        proc.wait(timeout=30)
    engine.dispose()


def _wait_exit(pid: int, timeout_s: float = 240) -> None:
    proc = launcher._spawned.get(pid)
    if proc is None:  # already reaped by the launcher
        return
    try:
        proc.wait(timeout=timeout_s)
    except Exception:  # noqa: BLE001 - the assertion below says what went wrong
        pytest.fail(f"worker {pid} still running after {timeout_s} s")


def test_a_worker_started_for_a_job_runs_it_and_no_older_one(setup):
    engine, url, started = setup
    older = jobs.enqueue(engine, TINY)
    mine = jobs.enqueue(engine, TINY)
    pid = launcher.ensure_local_worker(engine, jobs.get_job(engine, mine), url)
    assert pid is not None
    started.append(pid)
    _wait_exit(pid)
    assert jobs.get_job(engine, mine).status == "done"
    assert jobs.get_job(engine, older).status == "queued"  # not taken instead


def test_a_target_nobody_serves_starts_no_measurement_here(setup):
    engine, url, started = setup
    other = jobs.enqueue(engine, TINY)
    aimed = jobs.enqueue(engine, TINY, target="NVIDIA H200 that nobody has")
    pid = launcher.ensure_local_worker(engine, jobs.get_job(engine, aimed), url)
    assert pid is not None
    started.append(pid)
    _wait_exit(pid)
    assert jobs.get_job(engine, aimed).status == "queued"  # left for a worker that can
    assert jobs.get_job(engine, other).status == "queued"  # and nothing else taken


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (Z: a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def test_a_worker_is_reaped_when_its_job_ends_not_at_the_next_launch(setup):
    # The dashboard kept a finished worker as a zombie until the next Launch or its own
    # exit. Nothing here waits on the process: the launcher must.
    engine, url, started = setup
    job_id = jobs.enqueue(engine, TINY)
    pid = launcher.ensure_local_worker(engine, jobs.get_job(engine, job_id), url)
    assert pid is not None
    started.append(pid)
    deadline = time.monotonic() + 240
    while jobs.get_job(engine, job_id).status not in ("done", "failed"):
        assert time.monotonic() < deadline, "the job did not end within 240 s"
        time.sleep(0.5)
    assert jobs.get_job(engine, job_id).status == "done"
    deadline = time.monotonic() + 30  # the worker says goodbye after its job
    while _state(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _state(pid) is None, f"worker {pid} is still there in state {_state(pid)!r}"
    assert pid not in launcher._spawned
    # Its pid file went with it (issue 46: no marker outlives its worker).
    assert not launcher._state_path(url, "pid").exists()


def test_a_worker_sigtermed_while_starting_leaves_no_pid_file(setup):
    # Killed before it could claim anything (torch still importing): the dashboard's
    # reaper removes the file the worker could not.
    import signal as sig

    engine, url, started = setup
    job_id = jobs.enqueue(engine, TINY)
    pid = launcher.ensure_local_worker(engine, jobs.get_job(engine, job_id), url)
    assert pid is not None and launcher._state_path(url, "pid").read_text() == str(pid)
    started.append(pid)
    os.kill(pid, sig.SIGTERM)
    _wait_exit(pid, 60)
    deadline = time.monotonic() + 30  # the reaper thread runs once the process ended
    while launcher._state_path(url, "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not launcher._state_path(url, "pid").exists()
    assert launcher.local_worker_pid(url) is None
