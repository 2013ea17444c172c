"""Issue 11, work that dies: every run being written heartbeats, readers show a silent one
as "lost" at read time (read-only too), writers persist it, the Launch page only reads,
and a worker keeps what it measured through a database outage. Plus the queue's bounds:
a job's estimated cost, waiting jobs in all and per dashboard session.

"Lost" is decided at an explicit `now`, never by waiting out the timeout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import OperationalError

from contract import bundle as fmt
from contract import limits, queue
from contract.run_record import Environment, Run
from contract.specs import SweepSpec, estimate_cost
from db import jobs, queries, store
from db.engine import make_engine
from db.models import JobRow, RunRow
from tests.conftest import ROOT

TINY = {"workload": "mlp", "params": {"depth": "1", "width": "4"}, "batch_sizes": [1, 2],
        "modes": ["eager"], "device": "cpu", "timing": "quick"}
LATER = timedelta(seconds=limits.LOST_AFTER_S + 1)


def _status(engine, run_id: int, now=None) -> str:
    return queries.run_header(engine, run_id, now).status


def _stored(engine, model, row_id: int) -> str:
    with engine.connect() as c:
        return c.scalar(select(model.status).where(model.id == row_id))


def _worker(engine, name="w"):
    wid = jobs.register_worker(engine, name=name, hostname="h", pid=1, gpu_name=None,
                               has_cuda=False, torch_version="x")
    return queue.Worker(id=wid, name=name, gpu_name=None, has_cuda=False)


# --- a killed `runner sweep` ------------------------------------------------------------------

def test_sigkilled_sweep_reads_lost_after_the_timeout_and_a_writer_persists_it(
        sqlite_url, monkeypatch):
    sizes = ",".join(str(n) for n in range(1, 41))
    p = subprocess.Popen([sys.executable, "-m", "runner", "sweep", "--workload",
                          "tests.gpu_models:slow", "--batch-sizes", sizes, "--modes",
                          "eager", "--quick", "--device", "cpu", "--db", sqlite_url],
                         cwd=ROOT, env={**os.environ, "LB_TEST_SLEEP": "0.01"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    engine = make_engine(sqlite_url)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with engine.connect() as c:
                    if c.scalar(text("SELECT count(*) FROM measurements")):
                        break
            except OperationalError:  # the schema is still being created
                pass
            time.sleep(0.1)
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    run_id = queries.list_runs(engine)[0].header.id
    with engine.connect() as c:
        beat = c.scalar(select(RunRow.heartbeat_at).where(RunRow.id == run_id))
    assert beat is not None  # the sweep heartbeated its run
    now = jobs.db_now(engine)
    assert _status(engine, run_id, now) == "running"  # it beat moments ago
    assert _status(engine, run_id, now + LATER) == "lost"
    frame = queries.runs_frame(engine, now=now + LATER)
    assert frame.loc[frame["id"] == run_id, "status"].item() == "lost"
    assert queries.list_runs(engine, now + LATER)[0].header.status == "lost"  # `runner list`
    assert _stored(engine, RunRow, run_id) == "running"  # reading wrote nothing

    # A read-only deployment shows the truth too, through its read-only engine.
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    ro = make_engine(sqlite_url)
    assert _status(ro, run_id, now + LATER) == "lost"
    with pytest.raises(PermissionError):
        jobs.reap_lost(ro, now=now + LATER)  # and cannot persist it
    ro.dispose()
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY")

    points = len(store.export_bundle(engine, run_id)["measurements"])
    assert jobs.reap_lost(engine, now=now) == [] and _stored(engine, RunRow, run_id) == "running"
    assert jobs.reap_lost(engine, now=now + LATER) == []  # no job: the run alone
    assert _stored(engine, RunRow, run_id) == "failed"
    doc = fmt.validate(store.export_bundle(engine, run_id))
    assert doc["run"]["status"] == "failed" and len(doc["measurements"]) == points >= 1
    engine.dispose()


def test_a_run_sink_heartbeats_while_open_and_stops_when_finished(sqlite_engine):
    from runner.ops.sinks import DbSink

    sink = DbSink(sqlite_engine, heartbeat_s=0.02)
    sink.start(Environment(device="cpu"),
               Run(uuid="beat-1", workload="mlp", created_at=fmt.now_iso()))

    def beat():
        with sqlite_engine.connect() as c:
            return c.scalar(select(RunRow.heartbeat_at).where(RunRow.id == sink.run_id))

    first, deadline = beat(), time.monotonic() + 30
    while beat() == first and time.monotonic() < deadline:
        time.sleep(0.02)
    assert beat() > first
    sink.finish("done")
    sink._beats.join(timeout=30)
    assert not sink._beats.is_alive()


def test_a_job_still_running_keeps_its_run_from_the_runs_own_reaping(sqlite_engine):
    job_id = jobs.enqueue(sqlite_engine, TINY)
    jobs.claim_next(sqlite_engine, _worker(sqlite_engine))
    run_id = store.start_run(sqlite_engine, Environment(device="cpu"),
                             Run(uuid="job-run", workload="mlp", created_at=fmt.now_iso()))
    jobs.link_run(sqlite_engine, job_id, run_id)
    old = jobs.db_now(sqlite_engine) - timedelta(hours=1)
    with sqlite_engine.begin() as c:  # the run's own beat is old, its job's is fresh
        c.execute(update(RunRow).values(heartbeat_at=old, created_at=old))
    assert jobs.reap_lost(sqlite_engine) == []
    assert _stored(sqlite_engine, RunRow, run_id) == "running"


# --- a dead worker, nothing else running -------------------------------------------------------

def test_dead_workers_job_reads_lost_with_nothing_else_running(any_url):
    engine = make_engine(any_url)
    job_id = jobs.enqueue(engine, TINY)
    jobs.claim_next(engine, _worker(engine))  # ...and then the worker dies: no beats
    now = jobs.db_now(engine)
    assert jobs.get_job(engine, job_id, now=now).shown_status == "running"
    assert jobs.get_job(engine, job_id, now=now + LATER).shown_status == "lost"
    listed = jobs.list_jobs(engine, now=now + LATER)
    assert [(j.id, j.status, j.shown_status) for j in listed] == [
        (job_id, "running", "lost")]  # stored: still running; nothing wrote
    assert jobs.reap_lost(engine, now=now + LATER) == [job_id]
    assert jobs.get_job(engine, job_id).shown_status == "failed"
    engine.dispose()


def test_launch_page_shows_a_lost_job_without_writing(app_db_url):
    from tests.apptest import open_app

    engine = make_engine(app_db_url)
    job_id = jobs.enqueue(engine, TINY)
    jobs.claim_next(engine, _worker(engine))
    old = jobs.db_now(engine) - timedelta(hours=1)
    with engine.begin() as c:
        c.execute(update(JobRow).values(heartbeat_at=old))
    at = open_app("pages/launch.py", job=str(job_id))
    assert f"Job {job_id}: lost" in [s.value for s in at.subheader]
    assert _stored(engine, JobRow, job_id) == "running"  # the page only read
    reap = next(b for b in at.button if b.key == "reap_lost")
    reap.click()
    at.run()
    assert _stored(engine, JobRow, job_id) == "failed"  # the explicit action persists it
    engine.dispose()


# --- result writes through a database outage ----------------------------------------------------

def _flaky(monkeypatch, module, name: str, failures: int) -> list[int]:
    """Make module.name fail `failures` times as a database outage would, then work."""
    real, calls = getattr(module, name), []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) <= failures:
            raise OperationalError("UPDATE jobs ...", {}, Exception("server closed the "
                                                                    "connection"))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, flaky)
    return calls


def _one_job_worker(engine, sleeps):
    from runner.ops.worker import WorkerLoop

    return WorkerLoop(engine, "retry-test", sleep=sleeps.append, log=lambda _m: None)


def test_worker_retries_result_writes_and_keeps_the_measured_job(sqlite_engine, monkeypatch):
    job_id = jobs.enqueue(sqlite_engine, TINY)
    finish_calls = _flaky(monkeypatch, jobs, "finish", 3)
    point_calls = _flaky(monkeypatch, store, "add_measurement", 2)
    sleeps: list[float] = []
    assert _one_job_worker(sqlite_engine, sleeps).serve(once=True) == 0
    job = jobs.get_job(sqlite_engine, job_id)
    assert job.status == "done", job.message
    doc = store.export_bundle(sqlite_engine, job.run_id)
    assert doc["run"]["status"] == "done" and len(doc["measurements"]) == 2
    assert len(finish_calls) == 4 and len(point_calls) == 4  # 2 points + 2 failures
    from runner.ops.worker import RETRY_DELAYS_S
    assert sleeps == [*RETRY_DELAYS_S[:2], *RETRY_DELAYS_S[:3]]  # bounded back-off


def test_worker_keeps_points_in_a_bundle_when_the_database_stays_away(
        sqlite_engine, monkeypatch, tmp_path):
    from runner.ops.worker import RETRY_DELAYS_S, UNSENT_DIR

    monkeypatch.setenv(UNSENT_DIR, str(tmp_path))
    job_id = jobs.enqueue(sqlite_engine, TINY)
    _flaky(monkeypatch, jobs, "finish", 10**6)
    _flaky(monkeypatch, store, "finish_run", 10**6)
    sleeps: list[float] = []
    assert _one_job_worker(sqlite_engine, sleeps).serve(once=True) == 0  # no crash
    assert sum(sleeps) == sum(RETRY_DELAYS_S)  # waited once, bounded, then gave up
    [kept] = tmp_path.glob(f"launchbench-job-{job_id}-*.json")
    doc = fmt.validate(json.loads(kept.read_text()))
    assert len(doc["measurements"]) == 2  # what was measured is not lost
    assert doc["run"]["status"] == "done"  # the sweep's verdict, not the clean-up's
    # The job was never ended: it reads lost after the timeout, like a dead worker's.
    assert jobs.get_job(sqlite_engine, job_id, now=jobs.db_now(sqlite_engine) + LATER
                        ).shown_status == "lost"


def test_worker_survives_its_connections_killed_on_postgresql(pg_url, monkeypatch):
    engine = make_engine(pg_url)
    job_id = jobs.enqueue(engine, TINY)
    real = jobs.finish

    def kill_then_finish(*args, **kwargs):
        # Every other backend of this database: the worker's pooled connections die.
        other = make_engine(pg_url)
        with other.connect() as k:
            k.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                           "datname = current_database() AND pid <> pg_backend_pid()"))
        other.dispose()
        return real(*args, **kwargs)

    monkeypatch.setattr(jobs, "finish", kill_then_finish)
    assert _one_job_worker(engine, []).serve(once=True) == 0
    assert jobs.get_job(engine, job_id).status == "done"
    engine.dispose()


# --- a job's cost, and how many may wait --------------------------------------------------------

def test_cost_bound_refuses_what_cannot_fit_and_passes_the_defaults(sqlite_engine):
    huge = {**TINY, "params": {"depth": "1024", "width": "65536"}, "batch_sizes": [65536],
            "device": "auto"}
    with pytest.raises(jobs.JobSpecError, match=r"needs about [\d,.]+ GiB .* 72\.0 GiB"):
        jobs.enqueue(sqlite_engine, huge)
    decode = {**TINY, "workload": "transformer-decode", "params": {
        "layers": "128", "d_model": "16384", "kv_len": "65536"}, "batch_sizes": [1024]}
    with pytest.raises(jobs.JobSpecError, match="device memory"):
        jobs.enqueue(sqlite_engine, decode)
    assert jobs.list_jobs(sqlite_engine) == []  # refused: nothing queued
    for workload in ("mlp", "transformer-decode", "train-step", "kernel-chain"):
        c = estimate_cost(workload, {}, [1, 8, 64, 512], ["eager", "reduce-overhead"])
        assert c.points == 8 and 0 < c.memory_bytes < 2**31 and c.refusal() is None
    # A training step's memory grows with its parameters, so it cannot escape the bound.
    big = {"model": "transformer", "width": "8192", "blocks": "64", "seq": "4096"}
    assert estimate_cost("train-step", big, [64], ["cuda-graph"]).refusal() is not None
    chain = estimate_cost("kernel-chain", {}, [limits.MAX_BATCH_SIZE], ["cuda-graph"])
    assert 4 * limits.MAX_BATCH_SIZE * 4 == chain.memory_bytes  # 4 float32 copies: fits
    # The target's memory when it is known: what fits 80 GiB may not fit 1 GiB.
    mid = {**TINY, "params": {"depth": "8", "width": "8192"}, "batch_sizes": [4096]}
    assert jobs.enqueue(sqlite_engine, mid)
    with pytest.raises(jobs.JobSpecError, match="of 1.0 GiB"):
        jobs.enqueue(sqlite_engine, mid, memory_bytes=1 << 30)
    with pytest.raises(jobs.JobSpecError, match="device memory"):
        jobs.check_spec(mid, 1 << 30)  # what a worker with a 1 GiB GPU checks on claim


def test_form_shows_the_limits_and_the_cost():
    from pages.logic import launch_form as lf

    words = lf.limits_text(None, "any GPU")
    for figure in (limits.MAX_JOB_POINTS, limits.MAX_QUEUED_PER_SESSION,
                   limits.MAX_QUEUED_JOBS):
        assert str(figure) in words
    assert "80.0 GiB" in words and "90%" in words
    tiny = SweepSpec.from_json(TINY)
    cost, refusal = lf.cost(replace(tiny, params={"depth": "1024", "width": "65536"},
                                    batch_sizes=(65536,)), None)
    assert "estimated peak memory" in cost and "needs about" in refusal
    assert lf.cost(tiny, None)[1] is None


def test_queue_caps_per_session_and_in_all(any_url, monkeypatch):
    engine = make_engine(any_url)
    for _ in range(limits.MAX_QUEUED_PER_SESSION):
        jobs.enqueue(engine, TINY, session="tab-a")
    with pytest.raises(jobs.QueueFull, match=f"already has {limits.MAX_QUEUED_PER_SESSION}"):
        jobs.enqueue(engine, TINY, session="tab-a")
    jobs.enqueue(engine, TINY, session="tab-b")  # another session still may
    monkeypatch.setattr(jobs, "MAX_QUEUED_JOBS", limits.MAX_QUEUED_PER_SESSION + 2)
    jobs.enqueue(engine, TINY)
    with pytest.raises(jobs.QueueFull, match="queue already holds"):
        jobs.enqueue(engine, TINY, session="tab-c")
    with engine.connect() as c:  # refused: rolled back, nothing half-written
        assert c.scalar(select(func.count()).select_from(JobRow)) == (
            limits.MAX_QUEUED_PER_SESSION + 2)
    # A job that runs frees its place.
    jobs.claim_next(engine, _worker(engine))
    jobs.enqueue(engine, TINY, session="tab-c")
    jobs.enqueue(engine, TINY)  # the CLI (no session) is not capped
    engine.dispose()
