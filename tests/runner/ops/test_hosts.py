"""One host, several GPUs: the host gate (exclusive lock, shared bookkeeping), pinning,
the worker table's host fields and `workers --per-gpu`, on the CPU.

Processes are sequenced by files and the registry's own states, never by sleeps; the
timeouts are failure guards only.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import pytest
from sqlalchemy import select

from contract.queue import Worker
from db import hosts, jobs
from db.engine import make_engine
from db.models import MeasurementRow, RunRow, WorkerRow
from runner.core import host_gate
from runner.core.placement import PlacementError, format_cpus, parse_cpus
from runner.ops import host
from runner.ops.cli import main
from tests.conftest import ROOT

GUARD_S = 180.0
CHILDREN = [sys.executable, str(ROOT / "tests" / "host_children.py")]

# `nvidia-smi topo -m` as printed on an 8-GPU, two-socket node (the layout of the public
# samples of that tool: a tab-separated matrix, the header underlined with ANSI codes by
# some driver versions, an empty "GPU NUMA ID" cell, then the legend).
TOPO_8 = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tCPU Affinity\t"
    "NUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    + "".join(f"GPU{g}\t" + "\t".join(" X " if g == o else "NV18" for o in range(8))
              + f"\tPXB\t{'0-63,128-191' if g < 4 else '64-127,192-255'}\t{g // 4}\t\tN/A\n"
              for g in range(8))
    + "NIC0\tPXB\tPXB\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\t X \t\t\t\t\n\n"
    "NIC Legend:\n\n  NIC0: mlx5_0\n\nLegend:\n\n  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n")
TOPO_VM = ("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
           "GPU0\t X \tN/A\tN/A\t\tN/A\n\nLegend:\n\n  X    = Self\n")


# --- pure parts ------------------------------------------------------------------------------

def test_topology_parsing_on_sample_text():
    numa = host.parse_topology(TOPO_8)
    assert sorted(numa) == list(range(8))
    assert numa[0] == numa[3] == [*range(0, 64), *range(128, 192)]
    assert format_cpus(numa[5]) == "64-127,192-255"
    assert host.parse_topology(TOPO_VM) == {}  # a VM: no affinity, nothing pinned
    assert host.parse_topology("") == {}
    assert host.parse_topology("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                               "GPU0\t X \tPIX\t0,2,4\t0\n") == {0: [0, 2, 4]}


def test_cpu_lists_round_trip_and_bad_ones_name_the_value():
    assert parse_cpus("0-3,8") == [0, 1, 2, 3, 8] and format_cpus([8, 0, 1, 2, 3]) == "0-3,8"
    for bad in ("", "a", "3-1", "1-", "0-99999"):
        with pytest.raises(PlacementError, match=repr(bad)):
            parse_cpus(bad)


def test_plan_names_pins_and_refuses_what_is_not_there():
    topo = lambda: host.parse_topology(TOPO_8)  # noqa: E731
    entries = host.plan(None, pin_cpus=True, host="n1", visible=lambda: [0, 5], topo=topo)
    assert [(e["name"], e["gpu"]) for e in entries] == [("n1-gpu0", 0), ("n1-gpu5", 5)]
    assert format_cpus(entries[1]["cpus"]) == "64-127,192-255"
    assert host.plan([1], pin_cpus=False, host="n1", visible=lambda: None)[0]["cpus"] is None
    assert host.worker_argv(["w"], entries[1], ["--db", "x"]) == [
        "w", "--name", "n1-gpu5", "--gpu", "5", "--cpus", "64-127,192-255", "--db", "x"]
    with pytest.raises(host.HostError, match="cannot count GPUs"):
        host.plan(None, pin_cpus=False, visible=lambda: None)
    with pytest.raises(host.HostError, match="no visible GPU"):
        host.plan(None, pin_cpus=False, visible=lambda: [])
    with pytest.raises(host.HostError, match="GPU 3, which is not visible"):
        host.plan([0, 3], pin_cpus=False, visible=lambda: [0, 1])


def test_overlap_counts_every_section_that_met_this_one():
    before = {"a": (2, "timing"), "b": (4, "idle"), "c": (1, "idle"), "d": (7, "waiting"),
              "f": (3, "timing")}
    after = {"a": (2, "idle"), "b": (5, "gone"), "c": (1, "idle"), "d": (7, "timing"),
             "e": (1, "idle"), "f": (3, "gone")}
    # a: timing at the start; b: a whole section in between, then exited; d: timing at
    # the end; e: came and timed in between; c: idle throughout; f: dying as we started
    # (its entry still held, as the kernel may leave it a moment after the lock).
    assert host_gate.overlapping(before, after) == {"a", "b", "d", "e"}


def test_host_fields_checked_and_workers_grouped_by_host(sqlite_engine):
    e = sqlite_engine
    for slot in (2, 0):
        jobs.register_worker(e, name=f"x-gpu{slot}", hostname="x", pid=1, gpu_name="G",
                             has_cuda=True, torch_version="t", host_slot=slot,
                             host_policy="exclusive", cuda_visible_devices=str(slot),
                             cpus="0-3")
    jobs.register_worker(e, name="y", hostname="y", pid=2, gpu_name=None, has_cuda=False,
                         torch_version="t")
    groups = hosts.by_host(jobs.live_workers(e))
    assert list(groups) == ["x", "y"] and [w.host_slot for w in groups["x"]] == [0, 2]
    assert hosts.describe("x", groups["x"]) == "2 workers on host x (timing: exclusive)"
    assert hosts.describe("y", groups["y"]) == "1 worker on host y (timing: unknown)"
    assert hosts.mixed_policies(groups["x"]) == []
    shared = Worker(id=0, name="s", host_policy="shared")
    assert hosts.mixed_policies([*groups["x"], shared]) == ["exclusive", "shared"]
    with pytest.raises(ValueError, match="host_policy 'loose'"):
        jobs.register_worker(e, name="z", hostname="z", pid=3, gpu_name=None,
                             has_cuda=False, torch_version="t", host_policy="loose")


def test_workers_lists_by_host_and_refuses_launch_flags_alone(sqlite_engine, sqlite_url,
                                                              capsys):
    for slot in range(4):
        jobs.register_worker(sqlite_engine, name=f"n-gpu{slot}", hostname="n", pid=slot,
                             gpu_name="NVIDIA H200", has_cuda=True, torch_version="t",
                             host_slot=slot, host_policy="shared")
    assert main(["workers", "--db", sqlite_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "4 workers on host n (timing: shared)"
    assert [line.split()[1] for line in out[1:]] == [f"n-gpu{s}" for s in range(4)]
    for argv, needle in ((["--gpus", "0"], "--gpus needs --per-gpu"),
                         (["--pin-cpus"], "--pin-cpus needs --per-gpu")):
        assert main(["workers", "--db", sqlite_url, *argv]) == 2
        assert capsys.readouterr().err == f"error: {needle} (without it, workers lists)\n"


# --- the gate between processes ----------------------------------------------------------

def _wait_for(predicate, what: str, timeout: float = GUARD_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _gate_child(directory: Path, policy: str, name: str) -> subprocess.Popen:
    return subprocess.Popen([*CHILDREN, "gate", str(directory), policy, name], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _states(directory: Path) -> list[str]:
    return [n.split(".")[3] for n in os.listdir(directory) if n.startswith("w.")]


def _out(directory: Path, name: str) -> dict:
    _wait_for(lambda: (directory / f"{name}.out").exists(), f"{name}.out")
    return json.loads((directory / f"{name}.out").read_text())


def test_exclusive_lock_released_when_its_holder_is_sigkilled(tmp_path):
    a = _gate_child(tmp_path, "exclusive", "a")
    _wait_for(lambda: (tmp_path / "a.in").exists(), "a inside its timing section")
    b = _gate_child(tmp_path, "exclusive", "b")
    # b queues behind a: its registry entry says so, and it is not inside.
    _wait_for(lambda: "waiting" in _states(tmp_path), "b waiting for the lock")
    assert not (tmp_path / "b.in").exists()
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=GUARD_S)
    _wait_for(lambda: (tmp_path / "b.in").exists(), "b inside once a is dead")
    (tmp_path / "b.go").touch()
    done = _out(tmp_path, "b")
    assert b.wait(timeout=GUARD_S) == 0
    assert done["wait_s"] > 0 and done["others"] == []  # a died: not counted as timing
    # Nobody holds the lock now.
    fd = os.open(tmp_path / host_gate.LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_shared_sections_count_the_others_timing(tmp_path):
    a = _gate_child(tmp_path, "shared", "a")
    _wait_for(lambda: (tmp_path / "a.in").exists(), "a timing")
    b = _gate_child(tmp_path, "shared", "b")  # no lock: b times while a does
    _wait_for(lambda: (tmp_path / "b.in").exists(), "b timing")
    (tmp_path / "b.go").touch()
    b_out = _out(tmp_path, "b")
    c = _gate_child(tmp_path, "shared", "c")  # starts and ends inside a's section
    _wait_for(lambda: (tmp_path / "c.in").exists(), "c timing")
    (tmp_path / "c.go").touch()
    c_out = _out(tmp_path, "c")
    (tmp_path / "a.go").touch()
    a_out = _out(tmp_path, "a")
    assert [p.wait(timeout=GUARD_S) for p in (a, b, c)] == [0, 0, 0]
    tokens = {k: v["token"] for k, v in (("a", a_out), ("b", b_out), ("c", c_out))}
    assert a_out["others"] == sorted([tokens["b"], tokens["c"]])  # c: a grown count
    assert b_out["others"] == [tokens["a"]] and c_out["others"] == [tokens["a"]]
    d = _gate_child(tmp_path, "shared", "d")  # alone now
    (tmp_path / "d.go").touch()
    assert _out(tmp_path, "d")["others"] == [] and d.wait(timeout=GUARD_S) == 0


def test_points_flagged_host_shared_with_the_others_counted(tmp_path):
    from runner.core.point import measure_batch
    from runner.core.timing import TIMING_PRESETS
    from runner.core.workloads import resolve

    other = _gate_child(tmp_path, "shared", "other")
    _wait_for(lambda: (tmp_path / "other.in").exists(), "another worker timing")
    host_gate.install(host_gate.Gate("shared", tmp_path))
    try:
        points = [p.to_json() for p in measure_batch(
            resolve("mlp", {"depth": "1", "width": "8"}), ("eager",), 2, "cpu",
            TIMING_PRESETS["quick"])]
    finally:
        host_gate.install(None)
        (tmp_path / "other.go").touch()
    assert other.wait(timeout=GUARD_S) == 0
    h = points[0]["details"]["host"]
    assert points[0]["status"] == "ok", points[0]["message"]
    assert h["policy"] == "shared" and h["shared"] is True and h["others_timing"] == 1
    assert len(h["windows"]) == 2  # the rounds, then the latency calls
    assert h["cpus"] == format_cpus(os.sched_getaffinity(0))


# --- real workers on one database ----------------------------------------------------------

TINY = {"workload": "mlp", "params": {"depth": "1", "width": "4"}, "batch_sizes": [1, 2, 3],
        "modes": ["eager"], "device": "cpu", "timing": "quick"}


def test_two_workers_never_time_at_once(any_url, tmp_path):
    engine = make_engine(any_url)
    lock_dir = tmp_path / "host"
    host_gate.check_dir(lock_dir)
    ids = [jobs.enqueue(engine, TINY) for _ in range(2)]
    # Hold the host's lock first, so both workers are queued on it before either times.
    held = os.open(lock_dir / host_gate.LOCK_NAME, os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    procs = [subprocess.Popen([sys.executable, "-m", "runner", "worker", "--db", any_url,
                               "--name", f"w{i}", "--host-lock-dir", str(lock_dir),
                               "--idle-exit", "1"], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(2)]
    try:
        _wait_for(lambda: _states(lock_dir).count("waiting") == 2, "both workers waiting")
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        os.close(held)
    outs = [p.communicate(timeout=GUARD_S)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert {jobs.get_job(engine, i).status for i in ids} == {"done"}
    with engine.connect() as c:
        rows = c.execute(select(RunRow.id, MeasurementRow.details).join(MeasurementRow.run)).all()
    engine.dispose()
    assert len(rows) == 6 and len({r.id for r in rows}) == 2
    windows = [(r.id, tuple(w)) for r in rows for w in r.details["host"]["windows"]]
    for (_, (a0, a1)), (_, (b0, b1)) in combinations(windows, 2):
        assert a1 <= b0 or b1 <= a0, f"overlapping timing: {(a0, a1)} and {(b0, b1)}"
    assert all(r.details["host"]["others_timing"] == 0 for r in rows)
    assert all(r.details["host"]["policy"] == "exclusive" for r in rows)
    first = {}
    for r in rows:  # each worker's first point waited for the lock the test held
        first.setdefault(r.id, r.details["host"]["wait_s"])
    assert all(w > 0 for w in first.values())


def test_worker_pinned_to_a_gpu_and_cpus_says_so(sqlite_url, tmp_path):
    cpu = min(os.sched_getaffinity(0))
    r = subprocess.run([sys.executable, "-m", "runner", "worker", "--db", sqlite_url, "--once",
                        "--gpu", "3", "--cpus", str(cpu), "--host-policy", "shared",
                        "--host-lock-dir", str(tmp_path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=GUARD_S)
    assert r.returncode == 0, r.stderr
    assert f"1 worker on host {socket.gethostname()} (timing: shared)" in r.stdout
    engine = make_engine(sqlite_url)
    with engine.connect() as c:
        w = c.execute(select(WorkerRow.__table__)).one()._mapping
    engine.dispose()
    assert (w["host_slot"], w["cuda_visible_devices"], w["cpus"], w["host_policy"]) == (
        3, "3", str(cpu), "shared")


@pytest.mark.parametrize("argv, needle", [
    (["--gpu", "-1"], "--gpu -1 must be a GPU index"),
    (["--cpus", "0-x"], "'0-x'"),
    (["--host-lock-dir", "/proc/launchbench"], "host lock directory '/proc/launchbench'"),
])
def test_worker_host_flags_bad_input_one_line(sqlite_url, argv, needle, capsys):
    before = dict(os.environ)
    assert main(["worker", "--db", sqlite_url, "--once", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert dict(os.environ) == before  # refused before pinning anything


# --- workers --per-gpu -----------------------------------------------------------------

def _ignoring_sigint():
    """What `make test &` or a CI runner gives its children: SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# (signal, how the launcher's output ends): the README promises "Ctrl-C or SIGTERM stops
# them all", whatever happened to the launcher's output and however it was started.
STOPS = {
    "sigterm": (signal.SIGTERM, "pipe"),
    "ctrl-c, started with SIGINT ignored": (signal.SIGINT, "pipe"),
    "hang-up": (signal.SIGHUP, "pipe"),
    "sigterm, its reader gone": (signal.SIGTERM, "reader gone"),
    "sigterm, stdout and stderr closed": (signal.SIGTERM, "closed"),
    "sigkill": (signal.SIGKILL, "pipe"),
}


@pytest.mark.parametrize("stop, output", list(STOPS.values()), ids=list(STOPS))
def test_per_gpu_starts_one_worker_per_gpu_and_stops_them_all(tmp_path, stop, output):
    fake = " ".join([*CHILDREN, "worker", str(tmp_path)])
    argv = [sys.executable, "-m", "runner", "workers", "--per-gpu", "--db", "sqlite:///x.db",
            "--host-policy", "shared", "--worker-command", fake]
    if output == "closed":  # `launcher >&- 2>&-`: no stdout, no stderr at all
        argv = ["sh", "-c", 'exec "$@" >&- 2>&-', "sh", *argv]
    launcher = subprocess.Popen(
        argv, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_ignoring_sigint if stop == signal.SIGINT else None,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "0,1,2"})
    names = [f"{socket.gethostname()}-gpu{g}" for g in range(3)]
    try:
        _wait_for(lambda: all((tmp_path / f"{n}.json").exists() for n in names) or
                  launcher.poll() is not None, "3 workers")
        if output == "reader gone":  # a closed ssh session, a dead `tee`
            launcher.stdout.close()
            launcher.stderr.close()
        launcher.send_signal(stop)
        launcher.wait(timeout=GUARD_S)
        err = "" if launcher.stderr.closed else launcher.stderr.read()
    finally:
        launcher.kill()
        launcher.wait()
    assert launcher.returncode == (-signal.SIGKILL if stop == signal.SIGKILL else 130), err
    for g, n in enumerate(names):
        doc = json.loads((tmp_path / f"{n}.json").read_text())
        assert doc["CUDA_VISIBLE_DEVICES"] == str(g) and doc["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        argv = doc["argv"]
        assert argv[:4] == ["--name", n, "--gpu", str(g)]
        assert argv[argv.index("--host-policy") + 1] == "shared" and "--db" in argv
        # Each got its SIGTERM (from the kernel when the launcher was SIGKILLed).
        _wait_for(lambda n=n: (tmp_path / f"{n}.stopped").exists(), f"{n} stopped")
    if output == "pipe" and stop != signal.SIGKILL:
        assert "stopping 3 worker(s)" in err


@pytest.mark.parametrize("argv, env, needle", [
    (["--gpus", "x"], {}, "--gpus 'x' must be GPU indexes"),
    (["--gpus", "4"], {"CUDA_VISIBLE_DEVICES": "0,1"}, "GPU 4, which is not visible"),
    ([], {"CUDA_VISIBLE_DEVICES": ""}, "no visible GPU"),
    ([], {"CUDA_VISIBLE_DEVICES": "GPU-1a2b"}, "does not list GPU indexes"),
    (["--idle-exit", "-1"], {}, "--idle-exit -1 must be from 0"),
])
def test_per_gpu_bad_input_one_line(argv, env, needle, monkeypatch, capsys):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["workers", "--per-gpu", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err, err


def test_sweep_refuses_a_bad_host_policy_from_the_environment(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(host_gate.POLICY_VAR, "loose")
    out = tmp_path / "r.json"
    assert main(["sweep", "--workload", "mlp", "--batch-sizes", "1", "--device", "cpu",
                 "--no-db", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "error: host policy 'loose' must be one of: exclusive, shared\n")
    assert not out.exists()


def test_per_gpu_kills_a_worker_that_ignores_sigterm(tmp_path):
    import threading

    marker = tmp_path / "up"
    stubborn = [sys.executable, "-c",
                "import pathlib, signal, sys, time; signal.signal(signal.SIGTERM, "
                "signal.SIG_IGN); pathlib.Path(sys.argv[1]).touch(); time.sleep(600)",
                str(marker)]
    lines: list[str] = []

    def stop_when_up():
        _wait_for(marker.exists, "the worker up")
        os.kill(os.getpid(), signal.SIGTERM)  # what `kill <launcher>` sends

    threading.Thread(target=stop_when_up, daemon=True).start()
    entry = {"name": "h-gpu0", "gpu": 0, "cpus": None}
    # Returns once every worker is reaped: this one, deaf to SIGTERM, only by SIGKILL.
    assert host.run_per_gpu([entry], stubborn, [], log=lines.append, grace_s=0.2) == 130
    assert lines[-1] == "stopping 1 worker(s)"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back as it was
