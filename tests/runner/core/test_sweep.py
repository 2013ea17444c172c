"""run_sweep on the CPU: a real quick sweep, failing points, cancellation, bad specs."""

from __future__ import annotations

import io

import pytest

from contract.bundle import make_bundle, validate
from contract.limits import MAX_BATCH_SIZE
from runner.core.sweep import SpecError, SweepSpec, run_sweep, validate_spec
from runner.core.workloads import WorkloadError
from tests.sweep_sink import TINY, ListSink


def spec(**kw):
    base = dict(workload="mlp", params=TINY, batch_sizes=(1, 4), modes=("eager",),
                device="cpu", timing="quick")
    return SweepSpec(**{**base, **kw})


def test_quick_cpu_sweep_measures_eager_and_compile_and_refuses_graphs():
    sink, seen = ListSink(), []
    status = run_sweep(spec(modes=("eager", "compile", "reduce-overhead", "cuda-graph"),
                            batch_sizes=(2,), label="t"),
                       sink, progress=lambda *a: seen.append(a), command="python -m x")
    assert status == "done" and sink.status == "done"
    assert sink.calls == ["start"] + ["point"] * 4 + ["finish"]
    assert sink.run.workload == "mlp" and sink.run.label == "t"
    assert sink.run.workload_params == {"depth": 2, "width": 16, "dtype": "float32"}
    assert sink.run.command == "python -m x" and sink.env.device == "cpu"
    by_mode = {m["mode"]: m for m in sink.points}
    for mode in ("eager", "compile"):
        m = by_mode[mode]
        assert m["status"] == "ok", m["message"]
        assert m["batch_size"] == 2 and m["step_ms"] > 0 and m["latency_ms"] > 0
        assert m["step_ms_p10"] <= m["step_ms"] <= m["step_ms_p90"]
        # One figure per interleaved round, the same rounds for both modes.
        assert m["samples"] == len(m["samples_ms"]) == len(m["launch_us_rounds"])
        assert 6 <= m["samples"] <= 12 and m["stop_reason"] in ("converged", "budget")
        assert m["step_ms_ci_low"] <= m["step_ms"] <= m["step_ms_ci_high"]
        assert m["launch_us"] > 0 and m["host_unstable"] in (True, False)
        assert m["noisy"] in (True, False)
        assert m["correct"] is True and m["max_abs_err"] < 1e-4
        # Launch and memory figures need CUDA: unknown on the CPU, never 0.
        assert m["gpu_kernels_per_step"] is None and m["graph_pool_bytes"] is None
    assert by_mode["compile"]["setup_s"] > 0
    assert by_mode["eager"]["samples"] == by_mode["compile"]["samples"]
    c = by_mode["compile"]
    assert c["speedup_ci_low"] <= c["speedup"] <= c["speedup_ci_high"]
    assert by_mode["eager"]["speedup"] is None  # eager over itself says nothing
    for mode in ("reduce-overhead", "cuda-graph"):
        assert by_mode[mode]["status"] == "unsupported"
        assert "CUDA" in by_mode[mode]["message"] and by_mode[mode]["step_ms"] is None
    # Progress: one call before each batch size, then one per mode as its setup starts
    # (a cold compile must not sit on "0 of 4 points" unnamed), the shared rounds, each
    # measured mode's profiled pass; a last one with no current point.
    assert [s[:3] for s in seen] == [
        (0, 4, ("4 modes", 2)), (0, 4, ("eager", 2, "setup")), (0, 4, ("compile", 2, "setup")),
        (0, 4, ("reduce-overhead", 2, "setup")), (0, 4, ("cuda-graph", 2, "setup")),
        (0, 4, ("4 modes", 2, "timing")), (0, 4, ("eager", 2, "profiling")),
        (0, 4, ("compile", 2, "profiling")), (4, 4, None)]
    assert seen[-1][3].mode == "cuda-graph"
    validate(make_bundle(sink.env.to_json(), {**sink.run.to_json(), "status": status},
                         sink.points))


def test_a_failing_point_is_stored_as_error_and_the_sweep_goes_on():
    sink = ListSink()
    status = run_sweep(spec(workload="tests.gpu_models:failing", params={"fail_at": "3"},
                            batch_sizes=(1, 3, 4)), sink)
    assert status == "done"
    statuses = [(m["batch_size"], m["status"]) for m in sink.points]
    assert statuses == [(1, "ok"), (3, "error"), (4, "ok")]
    bad = sink.points[1]
    assert "planted failure at batch size 3" in bad["message"]
    assert bad["step_ms"] is None
    assert sink.run.dtype is None  # a factory that does not say: unknown


def test_should_stop_cancels_between_points():
    sink = ListSink()
    status = run_sweep(spec(batch_sizes=(1, 2, 3)), sink,
                       should_stop=lambda: len(sink.points) >= 1)
    assert status == "cancelled" == sink.status
    assert [m["batch_size"] for m in sink.points] == [1]


def test_ctrl_c_during_a_point_cancels_and_keeps_finished_points():
    sink = ListSink()
    status = run_sweep(spec(workload="tests.gpu_models:interrupted",
                            params={"fail_at": "2"}, batch_sizes=(1, 2, 4)), sink)
    assert status == "cancelled" == sink.status
    assert [(m["batch_size"], m["status"]) for m in sink.points] == [(1, "ok")]


def test_a_failing_sink_marks_the_run_failed_and_raises():
    class Broken(ListSink):
        def point(self, measurement):
            raise OSError("disk full")

    sink = Broken()
    with pytest.raises(OSError):
        run_sweep(spec(batch_sizes=(1,)), sink)
    assert sink.status == "failed"


@pytest.mark.parametrize("kw,needle", [
    (dict(batch_sizes=()), "no batch sizes"),
    (dict(batch_sizes=(0,)), "batch size 0"),
    (dict(batch_sizes=(-4,)), "batch size -4"),
    (dict(batch_sizes=(MAX_BATCH_SIZE + 1,)), f"batch size {MAX_BATCH_SIZE + 1}"),
    (dict(batch_sizes=("8",)), "batch size '8'"),
    (dict(batch_sizes=(2, 2)), "batch size 2 is given twice"),
    (dict(modes=("turbo",)), "unknown mode 'turbo'"),
    (dict(modes=()), "no modes"),
    (dict(modes=("eager", "eager")), "'eager' is given twice"),
    (dict(device="tpu"), "unknown device 'tpu'"),
    (dict(timing="slow"), "unknown timing preset 'slow'"),
    (dict(label="x" * 201), "label"),
    (dict(processes=0), "processes 0"),
    (dict(processes=17), "processes 17"),
    (dict(processes=True), "processes True"),
    (dict(workload="nope"), "unknown workload 'nope'"),
    (dict(params={"depth": "-1"}), "'-1'"),
])
def test_bad_specs_are_one_line_errors(kw, needle):
    with pytest.raises(WorkloadError) as e:
        validate_spec(spec(**kw))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_cuda_without_cuda_is_refused_before_anything_runs():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    sink = ListSink()
    with pytest.raises(SpecError, match="no CUDA device"):
        run_sweep(spec(device="cuda"), sink)
    assert sink.calls == []


def test_factories_refused_where_imports_are_not_allowed():
    with pytest.raises(WorkloadError, match="command line only"):
        validate_spec(spec(workload="tests.gpu_models:failing", params={}),
                      allow_import=False)


def test_processes_pool_rounds_from_fresh_processes():
    """--processes 2: the second process's rounds join the first's (a real child
    process, python -m runner.core.repeat)."""
    one, two = ListSink(), ListSink()
    run_sweep(spec(batch_sizes=(2,), modes=("eager", "compile")), one)
    run_sweep(spec(batch_sizes=(2,), modes=("eager", "compile"), processes=2), two)
    for m in two.points:
        assert m["status"] == "ok", m["message"]
        assert m["details"]["processes"] == 2
        assert m["samples"] == len(m["launch_us_rounds"]) >= 12  # 6 rounds at least each
        procs = m["details"]["round_process"]
        assert len(procs) == m["samples"] and set(procs) == {0, 1}
    assert one.points[0]["details"]["processes"] == 1


def test_a_failing_repeat_process_keeps_the_first_pass_and_names_it(monkeypatch):
    import subprocess
    import sys

    from runner.core import repeat

    def broken(request, stderr):  # a real child that dies before printing any rounds
        return subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write("
                                 "'warming up\\nboom\\n'); sys.exit(1)"],
                                stdout=subprocess.PIPE, stderr=stderr, text=True)

    monkeypatch.setattr(repeat, "_held_child", broken)
    sink = ListSink()
    assert run_sweep(spec(batch_sizes=(2, 4), processes=2), sink) == "done"
    # The points of the first pass stand, holding the one process they have, and say
    # which pass is missing (before: a failed repeat made every point an error).
    assert [m["status"] for m in sink.points] == ["ok", "ok"]
    assert all(m["details"]["processes"] == 1 for m in sink.points)
    assert "repeat process 1 exited 1: boom" in sink.points[0]["details"]["repeat_errors"][0]


def test_held_repeat_processes_start_with_the_sweep_and_none_outlives_it(monkeypatch):
    """The K - 1 children start with the sweep and wait for their turn (issue 47); a
    sweep stopped before their passes ends them: no process is left running."""
    from runner.core import repeat

    started = []
    real = repeat._held_child

    def spy(request, stderr):
        proc = real(request, stderr)
        started.append(proc)
        return proc

    monkeypatch.setattr(repeat, "_held_child", spy)
    stops = iter([False, True])  # the first batch size runs, then the sweep is stopped
    sink = ListSink()
    status = run_sweep(spec(batch_sizes=(2, 4), processes=3), sink,
                       should_stop=lambda: next(stops, True))
    assert status == "cancelled" and len(started) == 2
    assert all(p.poll() is not None for p in started)  # ended, none left running
    # A sweep that runs its passes hands each held child its turn, in order.
    started.clear()
    sink = ListSink()
    assert run_sweep(spec(batch_sizes=(2,), processes=3), sink) == "done"
    assert len(started) == 2 and all(p.poll() is not None for p in started)
    assert sink.points[0]["details"]["processes"] == 3


@pytest.mark.parametrize("text", ["１,２", "1,٣", "1,2,4,...,８"])
def test_batch_sizes_take_ascii_digits_only_as_urls_do(text):
    """int() reads a full-width or Arabic-Indic digit as a digit; URLs refuse them. One
    rule for both: the Launch form's list and --batch-sizes refuse them, naming them."""
    from contract.specs import parse_batch_sizes

    with pytest.raises(SpecError, match="digits 0-9"):
        parse_batch_sizes(text)


def test_workload_parameters_take_ascii_digits_only():
    from contract.catalog import check_workload

    with pytest.raises(WorkloadError, match="'２'"):
        check_workload("mlp", {"depth": "２"})



def test_a_held_repeat_child_has_one_compile_thread_unless_the_user_set_one(monkeypatch):
    """Children start with CHILD_ENV (runner/core/repeat.py says why: no pool of compile
    workers in a child, which only loads what the sweep's own pass compiled); a value the
    user set for the sweep wins."""
    from runner.core import repeat

    seen = []

    class Fake:  # what Popen was given; stdin takes child()'s first line
        def __init__(self, args, **kw):
            seen.append(kw["env"])
            self.stdin = io.StringIO()

    monkeypatch.setattr(repeat.subprocess, "Popen", Fake)
    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    repeat._held_child(spec(processes=2), None)
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "4")
    repeat._held_child(spec(processes=2), None)
    assert [e["TORCHINDUCTOR_COMPILE_THREADS"] for e in seen] == ["1", "4"]


def test_a_held_repeat_child_imports_the_compiler_but_starts_no_pool_and_no_cuda():
    """While it waits, a held child loads Dynamo and Inductor (seconds it would spend at
    its first compile) and touches neither CUDA nor a compile pool."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from runner.core import repeat

    probe = ("import json, sys, torch\n"
             "from runner.core import repeat\n"
             "repeat.warm(repeat.read_spec())\n"
             "from torch._inductor import async_compile\n"
             "print(json.dumps({'inductor': 'torch._inductor.compile_fx' in sys.modules,"
             " 'pools': len(async_compile._pool_set),"
             " 'cuda': torch.cuda.is_initialized()}))\n")
    root = str(Path(repeat.__file__).resolve().parents[2])
    s = spec(batch_sizes=(2,), modes=("eager", "compile"), processes=2)
    out = subprocess.run([sys.executable, "-c", probe], input=json.dumps(s.to_json()) + "\n",
                         capture_output=True, text=True, cwd=root, timeout=300,
                         env={**os.environ, **repeat.CHILD_ENV, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"inductor": True, "pools": 0, "cuda": False}


def test_compile_helpers_end_before_the_first_rounds_and_none_outlives_the_sweep(
        monkeypatch, tmp_path):
    """With the compile helpers on (runner/core/compile_ahead.py; here on the CPU, which a
    sweep never asks them for, with a fake energy counter so that it reads an idle
    power), the sweep starts them before the idle power and releases them only after it,
    waits for them after the first batch size's setups and before its rounds (progress
    says so), and only then; every helper has ended by the first rounds; the later batch
    size's compile finds its graph on disk."""
    from runner.core import compile_ahead
    from tests.fake_energy import FakeDevice

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setattr(compile_ahead, "wanted", lambda spec: True)
    started, seen, released_after = [], [], []
    real_init, real_go = compile_ahead.Ahead.__init__, compile_ahead.Ahead.go

    def spy_init(self, s):
        real_init(self, s)
        started.extend(p for p, _ in self.running)

    def spy_go(self):
        if not self.released:
            released_after.append(list(seen))
        real_go(self)

    monkeypatch.setattr(compile_ahead.Ahead, "__init__", spy_init)
    monkeypatch.setattr(compile_ahead.Ahead, "go", spy_go)

    def progress(done, total, current, last):
        if current and current[1:] == (2, "energy") and not released_after:  # idle power
            assert started and all(p.poll() is None for p in started)  # held, alive
        if current and current[2:] == ("timing",):  # the rounds start: no helper runs
            assert started and all(p.poll() is not None for p in started)
        seen.append(current)

    sink = ListSink()
    assert run_sweep(spec(modes=("eager", "compile"), batch_sizes=(2, 4)), sink,
                     progress=progress,
                     energy_counter=FakeDevice(wall=True).counter()) == "done"
    phases = [c[1:] for c in seen if c and len(c) == 3]
    (before_release,) = released_after
    assert [c[1:] for c in before_release if c and len(c) == 3] == [(2, "energy")]
    assert phases.count((2, "ahead")) == 1 and (4, "ahead") not in phases
    assert phases.index((2, "ahead")) == phases.index((2, "timing")) - 1
    by = {(m["mode"], m["batch_size"]): m for m in sink.points}
    assert all(m["status"] == "ok" for m in sink.points)
    assert by[("compile", 4)]["details"]["compile"]["fxgraph_cache_hit"] >= 1
