"""A sticky CUDA error mid-sweep, faked on the CPU (tests/fatal_models.py): the points
before it are kept, the point that hit it is an error with the CUDA message, the batch
sizes after it run in fresh processes, and the CLI says so in one line, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from runner.core import cuda_fatal
from runner.core.sweep import SweepSpec, run_sweep
from runner.ops.sinks import MemorySink
from tests.conftest import ROOT

FACTORY = "tests.fatal_models:sticky"


@pytest.fixture(autouse=True)
def fresh_context():
    """Each test starts as a fresh process would: the faked context unpoisoned."""
    from tests import fatal_models

    fatal_models._poisoned = False
    cuda_fatal._lost_here = None
    yield
    fatal_models._poisoned = False
    cuda_fatal._lost_here = None  # a worker in a later test must not read it as its own


def sweep(params, sizes, modes=("eager",)):
    sink = MemorySink()
    status = run_sweep(SweepSpec(workload=FACTORY, params=params, batch_sizes=sizes,
                                 modes=modes, device="cpu", timing="quick"), sink)
    return status, {(m.mode, m.batch_size): m.to_json() for m in sink.measurements}, sink


def test_sticky_error_keeps_points_and_runs_the_rest_in_a_fresh_process():
    status, by, sink = sweep({"at": "8", "calls": "1"}, (1, 8, 16),
                             modes=("eager", "compile"))
    assert status == "failed" and sink.status == "failed"
    assert len(sink.measurements) == 6
    assert by[("eager", 1)]["status"] == "ok" and by[("eager", 1)]["step_ms"] > 0
    hit = by[("eager", 8)]
    assert hit["status"] == "error" and "device-side assert" in hit["message"]
    # The mode after the one that hit it never ran in the dead context.
    assert by[("compile", 8)]["status"] == "skipped"
    assert by[("compile", 8)]["message"] == "not run: CUDA context lost at batch 8"
    for mode in ("eager", "compile"):  # measured by a fresh process, whose flag is clean
        m = by[(mode, 16)]
        assert m["status"] == "ok" and m["step_ms"] > 0 and m["details"]["rescued"]
        assert not m["details"].get("cuda_context_lost")
    # A worker asks this before its next job (runner/ops/worker.py): it must exit.
    assert "device-side assert" in cuda_fatal.lost_here()
    assert cuda_fatal.summary(sink.measurements).startswith(
        "CUDA context lost at batch 8: RuntimeError: CUDA error: device-side assert")


def test_a_fresh_process_that_loses_its_context_too_hands_on_to_another():
    status, by, _ = sweep({"at": "8", "every": "1"}, (1, 8, 16, 32))
    assert status == "failed"
    assert [by[("eager", b)]["status"] for b in (1, 8, 16, 32)] == [
        "ok", "error", "error", "error"]
    # A failing reference (shared by the modes) is every mode's error.
    # 16 and 32 each lost a fresh process's context: two children, one batch size each.
    assert by[("eager", 16)]["details"]["rescued"] and by[("eager", 32)]["details"]["rescued"]
    assert all("device-side assert" in by[("eager", b)]["message"] for b in (8, 16, 32))


def test_sticky_detection_reads_codes_messages_and_causes():
    class Accel(RuntimeError):
        error_code = 700

    assert cuda_fatal.is_sticky(Accel("whatever"))
    assert cuda_fatal.is_sticky(RuntimeError("CUDA error: an illegal memory access was "
                                             "encountered"))
    try:
        try:
            raise RuntimeError("CUDA error: unspecified launch failure")
        except RuntimeError as e:
            raise ValueError("wrapped") from e
    except ValueError as wrapped:
        assert cuda_fatal.is_sticky(wrapped)
    # Out of memory is not sticky: the next point may well fit.
    assert not cuda_fatal.is_sticky(RuntimeError("CUDA out of memory. Tried to allocate"))
    assert not cuda_fatal.is_sticky(None)


@pytest.fixture
def cli(tmp_path, spawn):
    def run(*args):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LAUNCHBENCH_DB": ""}
        p = spawn([sys.executable, "-m", "runner", *args], cwd=tmp_path,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        out, err = p.communicate(timeout=600)
        return p.returncode, out, err

    return run


def test_cli_exits_non_zero_with_one_line_and_the_bundle_keeps_the_points(cli, tmp_path):
    out_file = tmp_path / "run.json"
    rc, out, err = cli("sweep", "--workload", FACTORY, "--param", "at=8", "--batch-sizes",
                       "1,8,16", "--modes", "eager", "--device", "cpu", "--quick",
                       "--no-db", "--out", str(out_file))
    assert rc == 1, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == [errors[0]] and "CUDA context lost at batch 8" in errors[0]
    doc = json.loads(out_file.read_text())
    assert doc["run"]["status"] == "failed"
    assert [(m["batch_size"], m["status"]) for m in doc["measurements"]] == [
        (1, "ok"), (8, "error"), (16, "ok")]


def test_a_repeat_process_losing_its_context_is_not_this_ones():
    """A --processes child that met a sticky error fails the points it pools into, but
    this process's context is fine: no rescue, no worker exit."""
    from runner.core.point import measure_batch
    from runner.core.repeat import RepeatError
    from runner.core.timing import TIMING_PRESETS
    from runner.core.workloads import resolve

    def extra(_modes):
        raise RepeatError("repeat process 1: RuntimeError: CUDA error: device-side assert "
                          "triggered")

    [m] = (p.to_json() for p in measure_batch(
        resolve("mlp", {"depth": "2", "width": "8"}), ("eager",), 2, "cpu",
        TIMING_PRESETS["quick"], extra_rounds=extra))
    assert m["status"] == "error" and "repeat process 1" in m["message"]
    assert not m["details"].get("cuda_context_lost") and cuda_fatal.lost_here() is None
