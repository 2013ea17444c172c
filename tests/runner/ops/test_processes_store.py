"""`--processes K` stores each point from its first pass and updates it as later passes
add their rounds (issue 29, item 6): a sweep killed in its first pass keeps the points it
finished. Real CLI sweeps on the CPU, each in its own process group (killed at
teardown) with a timing-lock directory of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from db import queries
from db.engine import make_engine
from runner.core.sweep import SweepSpec, run_sweep
from runner.ops.sinks import MemorySink
from tests.conftest import ROOT
from tests.sweep_sink import TINY


@pytest.fixture
def sweeps(tmp_path, spawn):
    def start(*argv: str) -> subprocess.Popen:
        env = {**os.environ, "LAUNCHBENCH_HOST_DIR": str(tmp_path / "host-lock")}
        env.pop("LAUNCHBENCH_READ_ONLY", None)
        return spawn([sys.executable, "-m", "runner", "sweep", *argv], cwd=ROOT, env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    return start


def _stored(url: str) -> list[dict]:
    engine = make_engine(url)
    try:
        runs = queries.runs_list(engine)
        if not runs:
            return []
        return [m.to_json() for m in queries.run_points(engine, runs[0].header.id)]
    finally:
        engine.dispose()


def test_a_sweep_killed_in_its_first_pass_keeps_its_finished_points(sqlite_url, sweeps):
    p = sweeps("--workload", "mlp", "--param", "depth=2", "--param", "width=16",
               "--batch-sizes", "1,2,4,8", "--modes", "eager", "--device", "cpu",
               "--quick", "--processes", "3", "--db", sqlite_url)
    # Kill it as soon as two points are stored. (Its repeat children start with it and
    # wait for their turn, so a running child says nothing of the pass; a sweep that ran
    # its repeat passes first would store nothing until the last and end before the
    # kill: the assert below.)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and p.poll() is None:
        if len(_stored(sqlite_url)) >= 2:
            break
        time.sleep(0.2)
    assert p.poll() is None, p.stderr.read()[-500:]
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    points = _stored(sqlite_url)
    assert len(points) >= 2, "a kill in the first pass lost every point"
    assert all(m["status"] == "ok" and m["step_ms"] > 0 for m in points)
    assert {m["details"]["processes"] for m in points} == {1}  # what they hold so far


def test_later_passes_update_the_stored_points(sqlite_url, sweeps):
    p = sweeps("--workload", "mlp", "--param", "depth=2", "--param", "width=16",
               "--batch-sizes", "2", "--modes", "eager,compile", "--device", "cpu",
               "--quick", "--processes", "3", "--db", sqlite_url)
    assert p.wait(timeout=600) == 0, p.stderr.read()[-500:]
    points = _stored(sqlite_url)
    assert sorted(m["mode"] for m in points) == ["compile", "eager"]  # replaced, not added
    for m in points:
        assert m["details"]["processes"] == 3
        assert set(m["details"]["round_process"]) == {0, 1, 2}
        assert m["samples"] == len(m["samples_ms"]) == len(m["details"]["round_process"])


def test_run_sweep_hands_each_point_over_then_updates_it():
    class Calls(MemorySink):
        def __init__(self):
            super().__init__()
            self.calls = []

        def point(self, m):
            self.calls.append(("point", m.intervals.processes))
            super().point(m)

        def update(self, m):
            self.calls.append(("update", m.intervals.processes))
            super().update(m)

    sink = Calls()
    spec = SweepSpec(workload="mlp", params=TINY, batch_sizes=(1,), modes=("eager",),
                     device="cpu", timing="quick", processes=3)
    assert run_sweep(spec, sink) == "done"
    assert sink.calls == [("point", 1), ("update", 2), ("update", 3)]
    assert len(sink.measurements) == 1 and sink.measurements[0].intervals.processes == 3
