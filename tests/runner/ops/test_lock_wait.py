"""What a job waits for, and what a worker leaves behind (issue 46): the host's timing
lock names its holder (pid, command, job, since when), a worker waiting for it says so on
its job, and neither its registry entry nor the dashboard's pid file outlives it.

Processes are sequenced by files and the registry's states, never by sleeps; the
timeouts are failure guards only. Every process started here is ended here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from contract.queue import LOCK_WAIT, waits_for_lock
from db import jobs
from db.engine import make_engine
from runner.core import host_gate
from runner.ops import launcher
from tests.conftest import ROOT
from tests.runner.ops.test_hosts import GUARD_S, _gate_child, _out, _wait_for

TINY = {"workload": "mlp", "params": {"depth": "1", "width": "4"}, "batch_sizes": [1],
        "modes": ["eager"], "device": "cpu", "timing": "quick"}


def _entries(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("w."))


def test_a_waiter_is_told_who_holds_the_lock_and_since_when(tmp_path):
    a = _gate_child(tmp_path, "exclusive", "a")
    try:
        _wait_for(lambda: (tmp_path / "a.in").exists(), "a inside its timing section")
        held = host_gate.read_holder(tmp_path)
        assert held is not None and held.pid == a.pid and held.job is None
        assert "host_children.py gate" in held.command
        told: list[tuple[bool, host_gate.Holder | None]] = []
        naps: list[float] = []
        g = host_gate.Gate("exclusive", tmp_path, wall=lambda: 1_780_000_000.0,
                           sleep=naps.append)
        g.job, g.on_wait = 7, lambda waiting, holder: told.append((waiting, holder))
        inside = threading.Event()

        def time_it() -> None:
            with g.timing():
                inside.set()
                # Ours now, with our job and the injected wall clock.
                assert host_gate.read_holder(tmp_path) == host_gate.Holder(
                    pid=os.getpid(), command=host_gate._command_line(),
                    since=1_780_000_000.0, job=7)

        t = threading.Thread(target=time_it)
        t.start()
        _wait_for(lambda: told, "the waiter told whom it waits for")
        assert told[0] == (True, held) and not inside.is_set()
        assert held.text().startswith(f"pid {a.pid} (") and held.text().endswith(" UTC")
        (tmp_path / "a.go").touch()
        t.join(GUARD_S)
        assert inside.is_set() and told[-1] == (False, None) and naps
    finally:
        (tmp_path / "a.go").touch()
        a.wait(timeout=GUARD_S)
    # Let go: no holder file names anyone; the child's registry entry left with it.
    assert host_gate.read_holder(tmp_path) is None
    assert [e.split(".")[1].split("-")[0] for e in _entries(tmp_path)] == [str(os.getpid())]
    g.close()
    assert _entries(tmp_path) == []


def test_a_gone_process_entry_stays_only_while_a_shared_section_needs_it(tmp_path):
    a = _gate_child(tmp_path, "shared", "a")
    _wait_for(lambda: (tmp_path / "a.in").exists(), "a timing")
    c = _gate_child(tmp_path, "shared", "c")  # starts and ends inside a's section
    _wait_for(lambda: (tmp_path / "c.in").exists(), "c timing")
    (tmp_path / "c.go").touch()
    c_token = _out(tmp_path, "c")["token"]
    assert c.wait(timeout=GUARD_S) == 0
    assert any(c_token in e for e in _entries(tmp_path))  # a still needs its count
    (tmp_path / "a.go").touch()
    assert c_token in _out(tmp_path, "a")["others"]
    assert a.wait(timeout=GUARD_S) == 0
    assert not any(_out(tmp_path, "a")["token"] in e for e in _entries(tmp_path))


def test_a_worker_says_it_waits_for_the_lock_and_leaves_nothing_on_sigterm(sqlite_url,
                                                                           tmp_path):
    pytest.importorskip("torch")
    engine = make_engine(sqlite_url)
    lock_dir, pid_file = tmp_path / "host", tmp_path / "worker.pid"
    holder = host_gate.Gate("exclusive", lock_dir)
    holder.job = 99
    job_id = jobs.enqueue(engine, TINY)
    env = {**os.environ, launcher.PID_FILE_VAR: str(pid_file), "PYTHONPATH": str(ROOT)}
    env.pop("LAUNCHBENCH_READ_ONLY", None)
    with holder.timing():  # this test holds the host's lock: the worker waits for it
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "worker", "--db", sqlite_url, "--job",
             str(job_id), "--host-lock-dir", str(lock_dir)], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        pid_file.write_text(str(proc.pid))  # as the launcher writes it
        try:
            job = _wait_for(lambda: (lambda j: j if waits_for_lock(j) else None)(
                jobs.get_job(engine, job_id)), "the job saying it waits for the lock")
            assert job.message.startswith(f"{LOCK_WAIT}, held by pid {os.getpid()} (job 99: ")
            assert job.points_done == 0 and len(_entries(lock_dir)) == 2
            proc.send_signal(signal.SIGTERM)
            out = proc.communicate(timeout=GUARD_S)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, out
    job = jobs.get_job(engine, job_id)
    engine.dispose()
    assert job.status == "cancelled" and not job.message.startswith(LOCK_WAIT)
    assert not pid_file.exists(), "the worker's pid file outlived it"
    assert _entries(lock_dir) == [e for e in _entries(lock_dir) if str(os.getpid()) in e]
    holder.close()


def test_the_pid_file_is_only_removed_for_its_own_pid(tmp_path):
    f = tmp_path / "w.pid"
    f.write_text("123")
    assert not launcher.remove_pid_file(f, 456) and f.exists()  # a later worker's
    assert launcher.remove_pid_file(f, 123) and not f.exists()
    assert not launcher.remove_pid_file(f, 123)  # gone already: nothing to do
