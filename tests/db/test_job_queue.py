"""The job queue on both backends: claiming, matching, cancelling, lost workers, read-only
mode, and real worker processes racing for one queue."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.queue import Job, JobProgress, Worker
from contract.run_record import Environment, Run
from db import jobs, store
from db.access import ReadOnlyError
from db.engine import make_engine
from db.models import MeasurementRow, RunRow
from tests.conftest import ROOT

TINY = {"workload": "mlp", "params": {"depth": "1", "width": "4"}, "batch_sizes": [1],
        "modes": ["eager"], "device": "cpu", "timing": "quick"}


def _worker(engine, name="w", gpu=None, cuda=False):
    wid = jobs.register_worker(engine, name=name, hostname="host", pid=1, gpu_name=gpu,
                               has_cuda=cuda, torch_version="2.x")
    return Worker(id=wid, name=name, gpu_name=gpu, has_cuda=cuda)


def _cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout, env={**os.environ, **(env or {})})


# --- the queue, in process -------------------------------------------------------------

def test_claim_takes_oldest_once_and_records_worker(engine):
    a, b = jobs.enqueue(engine, TINY), jobs.enqueue(engine, TINY)
    w = _worker(engine)
    first = jobs.claim_next(engine, w)
    assert first.id == a and first.status == "running" and first.worker_name == "w"
    assert jobs.claim_next(engine, w).id == b
    assert jobs.claim_next(engine, w) is None
    assert jobs.get_job(engine, a).points_total == 1


def test_target_and_cuda_matching(engine):
    cuda_job = jobs.enqueue(engine, {**TINY, "device": "cuda"})
    h200_job = jobs.enqueue(engine, {**TINY, "device": "auto"}, target="NVIDIA H200")
    named_job = jobs.enqueue(engine, TINY, target="box7")
    cpu = _worker(engine, "laptop")
    assert jobs.claim_next(engine, cpu) is None  # cuda job, someone else's GPU, other name
    box7 = _worker(engine, "BOX7")  # names match case-insensitively
    assert jobs.claim_next(engine, box7).id == named_job
    l40s = _worker(engine, "l40s-host", gpu="NVIDIA L40S", cuda=True)
    assert jobs.claim_next(engine, l40s).id == cuda_job
    assert jobs.claim_next(engine, l40s) is None  # the H200 job is not for it
    h200 = _worker(engine, "gpu-host", gpu="NVIDIA H200", cuda=True)
    assert jobs.claim_next(engine, h200).id == h200_job
    job = Job(id=0, device="cuda", target=None)
    assert not jobs.can_serve(cpu, job) and jobs.can_serve(l40s, job)
    assert jobs.can_serve(h200, Job(id=0, device="auto", target="nvidia h200"))


def test_cancel_queued_running_and_finished(engine):
    queued, running = jobs.enqueue(engine, TINY), jobs.enqueue(engine, TINY)
    assert jobs.cancel(engine, queued) == "cancelled"
    w = _worker(engine)
    assert jobs.claim_next(engine, w).id == running  # the cancelled one is skipped
    assert jobs.heartbeat(engine, w.id, running) is False
    assert jobs.cancel(engine, running) == "running"
    assert jobs.heartbeat(engine, w.id, running, progress=(1, 3, "eager batch 2")) is True
    assert jobs.finish(engine, running, "cancelled")
    with pytest.raises(jobs.JobFinished, match="already ended"):
        jobs.cancel(engine, running)
    with pytest.raises(jobs.JobNotFound, match="job 999 does not exist"):
        jobs.cancel(engine, 999)
    with pytest.raises(jobs.JobNotFound, match="does not exist"):
        jobs.get_job(engine, 10**15)  # past the INTEGER key: PostgreSQL must not be asked


def test_reap_lost_keeps_points_and_fails_run(engine):
    job_id = jobs.enqueue(engine, TINY)
    w = _worker(engine)
    jobs.claim_next(engine, w)
    run_id = store.start_run(engine, Environment(device="cpu"), Run(
        uuid=f"u-{job_id}-{time.time()}", workload="mlp", created_at=fmt.now_iso()))
    jobs.link_run(engine, job_id, run_id)
    store.add_measurement(engine, run_id, Measurement("eager", 1))
    now = jobs.db_now(engine)
    assert jobs.reap_lost(engine, timeout_s=60, now=now) == []  # it just beat
    # Decided at an explicit time, not by waiting: a busy machine changes nothing.
    assert jobs.reap_lost(engine, timeout_s=60, now=now + timedelta(seconds=61)) == [job_id]
    job = jobs.get_job(engine, job_id)
    assert job.status == "failed" and job.message.startswith("worker lost")
    assert store.export_bundle(engine, run_id)["run"]["status"] == "failed"
    assert len(store.export_bundle(engine, run_id)["measurements"]) == 1
    assert not jobs.finish(engine, job_id, "done")  # a late worker cannot overturn it
    assert jobs.heartbeat(engine, w.id, job_id) is True  # ...and is told to stop


def test_live_workers_and_goodbye(engine):
    w = _worker(engine, gpu="NVIDIA H200", cuda=True)
    assert [x.name for x in jobs.live_workers(engine)] == ["w"]
    # The clock is injected: 1.1 s after the last heartbeat, a 1 s timeout has passed
    # (a sleep against the timeout raced the machine's load).
    beat = jobs.live_workers(engine)[0].heartbeat_at
    assert jobs.live_workers(engine, timeout_s=1, now=beat + timedelta(seconds=1.1)) == []
    assert len(jobs.live_workers(engine, timeout_s=1,
                                 now=beat + timedelta(seconds=0.9))) == 1
    jobs.heartbeat(engine, w.id)
    assert len(jobs.live_workers(engine, timeout_s=1)) == 1
    jobs.stop_worker(engine, w.id)
    assert jobs.live_workers(engine) == []


@pytest.mark.parametrize("change, match", [
    ({"workload": "os.path:join"}, "command line only"),
    ({"workload": "nope"}, "unknown workload 'nope'"),
    ({"params": {"depth": "0"}}, "'depth': '0' is outside"),
    ({"params": {"rm": "-rf"}}, "no parameter 'rm'"),
    ({"batch_sizes": [0]}, "batch size 0"),
    ({"batch_sizes": [1, 1]}, "given twice"),
    ({"batch_sizes": list(range(1, 200)), "modes": list(fmt.MODES)}, "more than 512 points"),
    ({"modes": ["turbo"]}, "unknown mode 'turbo'"),
    ({"modes": []}, "non-empty"),
    ({"device": "tpu"}, "device 'tpu'"),
    ({"timing": "forever"}, "unknown timing preset 'forever'"),
    ({"label": "x" * 201}, "at most 200"),
    ({"shell": "ls"}, "unknown job spec field 'shell'"),
])
def test_bad_specs_write_nothing(sqlite_engine, change, match):
    with pytest.raises(ValueError, match=match):
        jobs.enqueue(sqlite_engine, {**TINY, **change})
    assert jobs.list_jobs(sqlite_engine) == []


def test_read_only_refused_in_the_functions(engine, monkeypatch):
    job_id = jobs.enqueue(engine, TINY)
    doc = fmt.make_bundle({"device": "cpu"}, {"uuid": "ro-1", "workload": "mlp",
                                              "created_at": fmt.now_iso(), "status": "done"}, [])
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    with pytest.raises(ReadOnlyError, match="read-only"):
        jobs.enqueue(engine, TINY)
    with pytest.raises(ReadOnlyError, match="cancel a job"):
        jobs.cancel(engine, job_id)
    with pytest.raises(ReadOnlyError, match="import a run"):
        store.import_bundle(engine, doc)
    from runner.ops.launcher import ensure_local_worker

    with pytest.raises(ReadOnlyError):
        ensure_local_worker(engine, jobs.get_job(engine, job_id), "sqlite:///x.db")
    assert [j.status for j in jobs.list_jobs(engine)] == ["queued"]
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(RunRow)) == 0
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "0")
    assert jobs.cancel(engine, job_id) == "cancelled"


def test_progress_estimate():
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    p = jobs.progress(Job(id=1, status="running", started_at=t0, points_done=2,
                          points_total=8), t0 + timedelta(seconds=10))
    assert p == JobProgress(elapsed_s=10.0, remaining_s=30.0, done=2, total=8,
                            fraction=0.25)
    assert jobs.progress(Job(id=1, status="queued", points_done=0, points_total=8),
                         t0).remaining_s is None


# --- the command line ------------------------------------------------------------------

def test_cli_enqueue_list_cancel(sqlite_url, capsys):
    from runner.ops.cli import main

    assert main(["enqueue", "--db", sqlite_url, "--workload", "mlp", "--batch-sizes",
                 "1,2,4,...,64", "--modes", "eager", "--quick", "--param", "depth=2",
                 "--target", "NVIDIA H200", "--label", "nightly"]) == 0
    job_id = int(capsys.readouterr().out)
    assert main(["jobs", "--db", sqlite_url]) == 0
    line = capsys.readouterr().out
    assert "queued" in line and "0/7" in line and "target=NVIDIA H200" in line
    assert main(["cancel", str(job_id), "--db", sqlite_url]) == 0
    assert f"job {job_id} cancelled" in capsys.readouterr().out


@pytest.mark.parametrize("argv, match", [
    (["cancel", "999"], "job 999 does not exist"),
    (["cancel", "abc"], "job id 'abc' is not a positive whole number"),
    (["enqueue", "--workload", "os:system", "--batch-sizes", "1"], "command line only"),
    (["enqueue", "--workload", "mlp", "--batch-sizes", "0"], "out of range"),
    (["enqueue", "--workload", "mlp", "--batch-sizes", "1", "--param", "depth=-3"],
     "'depth': '-3' is outside"),
    (["enqueue", "--workload", "mlp", "--batch-sizes", "1", "--target", ""], "--target"),
    (["worker", "--idle-exit", "-1"], "--idle-exit -1"),
    (["jobs", "--limit", "0"], "--limit 0"),
])
def test_cli_bad_input_one_line_exit_2(sqlite_engine, sqlite_url, capsys, argv, match):
    from runner.ops.cli import main

    assert main([*argv, "--db", sqlite_url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and "Traceback" not in err


def test_cli_on_a_missing_database_creates_nothing(tmp_path, capsys):
    from runner.ops.cli import main

    url = f"sqlite:///{tmp_path / 'none.db'}"
    for argv in (["jobs"], ["cancel", "1"]):
        assert main([*argv, "--db", url]) == 2
        assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cli_in_a_process_read_only_and_bad_flag(sqlite_url):
    r = _cli("enqueue", "--db", sqlite_url, "--workload", "mlp", "--batch-sizes", "1",
             env={"LAUNCHBENCH_READ_ONLY": "1"})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "read-only" in r.stderr
    r = _cli("worker", "--db", sqlite_url, "--bogus")
    assert r.returncode == 2 and r.stderr.strip().endswith("unrecognized arguments: --bogus")
    assert "Traceback" not in r.stderr


def test_worker_and_form_modules_do_not_import_torch():
    code = ("import sys, runner.ops.worker, runner.ops.commands.jobs, pages.logic.launch_form, "
            "db.jobs; sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


# --- real worker processes ---------------------------------------------------------------

def _start_worker(url, *args):
    return subprocess.Popen([sys.executable, "-m", "runner", "worker", "--db", url, *args],
                            cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def _wait_for(predicate, timeout=60.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# A worker elsewhere on this machine timing under the default host lock: what blocked
# this suite's workers for minutes before each test had its own lock directory.
HOLDER = """
import fcntl, os, pathlib, sys, time
from runner.core.host_gate import LOCK_NAME, check_dir, default_dir
fd = os.open(check_dir(default_dir()) / LOCK_NAME, os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    said = "held"
except BlockingIOError:  # a real worker on this host holds it already: as good
    said = "held elsewhere"
pathlib.Path(sys.argv[1]).write_text(said)
time.sleep(600)  # until the test ends it
"""


@pytest.fixture
def default_lock_held(tmp_path):
    """The host's default timing lock ($TMPDIR/launchbench-host/timing.lock) held by
    another process for the whole test."""
    from runner.core.host_gate import LOCK_NAME, default_dir

    ready = tmp_path / "holder.ready"
    env = {k: v for k, v in os.environ.items() if k != "LAUNCHBENCH_HOST_DIR"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(ready)], cwd=ROOT, env=env)
    try:
        _wait_for(lambda: ready.exists() or holder.poll() is not None, 60, "the holder")
        assert holder.poll() is None and ready.read_text().startswith("held")
        fd = os.open(default_dir() / LOCK_NAME, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # really held: a default worker would wait
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        yield holder
    finally:
        holder.kill()
        holder.wait()


RACED_JOBS = 20  # each raced by four: the meaning is in the race, not the count


def test_four_workers_race_for_every_job_and_run_each_exactly_once(any_url,
                                                                  default_lock_held):
    engine = make_engine(any_url)  # the schema exists before four workers open it at once
    # Every worker up and polling before the first job is queued: each job is raced by
    # all four. They time under the default (exclusive) policy, in this test's own host
    # lock directory, while another process holds the machine's default one.
    # --idle-exit 10: a worker up first waits for the slowest to start (torch's import
    # takes seconds on a busy 2-core host) instead of leaving before the race begins.
    procs = [_start_worker(any_url, "--name", f"w{i}", "--idle-exit", "10") for i in range(4)]
    try:
        _wait_for(lambda: len(jobs.live_workers(engine)) == 4, 300, "four workers polling")
        ids = {jobs.enqueue(engine, TINY) for _ in range(RACED_JOBS)}
        outs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outs
    claims = Counter(int(line.split()[-1]) for out in outs for line in out.splitlines()
                     if line.startswith("claimed job "))
    assert set(claims) == ids and set(claims.values()) == {1}  # each claimed exactly once
    assert sum(1 for out in outs if "claimed job" in out) >= 2  # they really raced
    rows = [j for j in jobs.list_jobs(engine, limit=1000) if j.id in ids]
    assert {j.status for j in rows} == {"done"}
    run_ids = {j.run_id for j in rows}
    assert len(run_ids) == RACED_JOBS and None not in run_ids
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(RunRow)) == RACED_JOBS  # none twice
        points = c.execute(select(MeasurementRow.details)).scalars().all()
    assert len(points) == RACED_JOBS
    assert {p["host"]["policy"] for p in points} == {"exclusive"}
    assert jobs.live_workers(engine) == []  # each said goodbye
    assert default_lock_held.poll() is None  # held throughout
    engine.dispose()


def _long_job(engine, n=24):
    return jobs.enqueue(engine, {**TINY, "batch_sizes": list(range(1, n + 1))})


def test_sigkill_mid_job_fails_after_timeout_points_intact(any_url):
    engine = make_engine(any_url)
    job_id = _long_job(engine)
    proc = _start_worker(any_url, "--heartbeat", "0.3")
    _wait_for(lambda: jobs.get_job(engine, job_id).points_done >= 2, 90, "2 points")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    run_id = jobs.get_job(engine, job_id).run_id
    assert jobs.reap_lost(engine, timeout_s=3) == []  # it beat moments ago: not lost yet
    # Another worker comes up, reaps the silent one's job, and finds nothing to do.
    survivor = _start_worker(any_url, "--lost-after", "3", "--idle-exit", "5")
    out = survivor.communicate(timeout=120)[0]
    assert f"job {job_id} failed: worker lost" in out
    job = jobs.get_job(engine, job_id)
    assert job.status == "failed" and job.message.startswith("worker lost")
    doc = fmt.validate(store.export_bundle(engine, run_id))  # whole and readable
    assert doc["run"]["status"] == "failed"
    points = doc["measurements"]
    assert 2 <= len(points) < 24 and len(points) >= job.points_done
    assert all(m["status"] == "ok" and m["step_ms"] > 0 for m in points)
    with engine.connect() as c:
        if engine.dialect.name == "sqlite":
            assert c.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            assert c.exec_driver_sql("PRAGMA foreign_key_check").all() == []
        orphans = c.execute(text("SELECT count(*) FROM measurements m LEFT JOIN runs r "
                                 "ON r.id = m.run_id WHERE r.id IS NULL")).scalar()
        assert orphans == 0
    engine.dispose()


def test_cancel_is_honoured_between_points(any_url):
    engine = make_engine(any_url)
    job_id = _long_job(engine)
    proc = _start_worker(any_url, "--once")
    _wait_for(lambda: jobs.get_job(engine, job_id).points_done >= 1, 90, "a point")
    assert jobs.cancel(engine, job_id) == "running"
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
    job = jobs.get_job(engine, job_id)
    assert job.status == "cancelled", out
    doc = store.export_bundle(engine, job.run_id)
    assert doc["run"]["status"] == "cancelled"
    assert 1 <= len(doc["measurements"]) < 24  # stopped early, finished points kept
    assert {m["status"] for m in doc["measurements"]} == {"ok"}
    engine.dispose()


def test_sigterm_stops_the_worker_and_its_job_cleanly(sqlite_url):
    engine = make_engine(sqlite_url)
    job_id, queued = _long_job(engine), jobs.enqueue(engine, TINY)
    proc = _start_worker(sqlite_url)
    _wait_for(lambda: jobs.get_job(engine, job_id).points_done >= 1, 90, "a point")
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, out
    job = jobs.get_job(engine, job_id)
    assert (job.status, job.message) == ("cancelled", "worker interrupted")
    assert store.export_bundle(engine, job.run_id)["run"]["status"] == "cancelled"
    assert jobs.get_job(engine, queued).status == "queued"  # left for another worker
    assert jobs.live_workers(engine) == []
    engine.dispose()
