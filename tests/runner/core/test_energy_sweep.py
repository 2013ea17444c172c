"""Energy through a real CPU sweep (issue 28): no counter on a CPU is a reason on every
point, never a 0; --no-energy says it was off; a counter handed in (the fake one on the
wall clock: real CPU steps, fake joules) gives figures, windows timed as their own phase
after the rounds, and idle power read once per sweep."""

from __future__ import annotations

import json

import pytest

from contract.measurement import ENERGY_NUMBER_FIELDS
from contract.specs import check_sweep
from runner.core import sweep as sweep_mod
from runner.core.energy import ENERGY_PRESETS
from runner.core.sweep import ENERGY_OFF, NO_CUDA, SpecError, SweepSpec, run_sweep
from runner.ops.cli import main
from tests.fake_energy import FakeDevice
from tests.sweep_sink import TINY, ListSink


def spec(**kw) -> SweepSpec:
    base = dict(workload="mlp", params=TINY, batch_sizes=(2,), modes=("eager",),
                device="cpu", timing="quick")
    return SweepSpec(**{**base, **kw})


def test_a_cpu_sweep_says_no_cuda_device_never_zero():
    sink = ListSink()
    assert run_sweep(spec(modes=("eager", "cuda-graph")), sink) == "done"
    eager, graph = sink.points
    assert eager["status"] == "ok"
    assert eager["energy_unavailable_reason"].startswith(NO_CUDA)
    assert all(eager[f] is None for f in ENERGY_NUMBER_FIELDS)
    assert "energy" not in eager["details"]["phase_s"]  # nothing ran
    assert graph["status"] == "unsupported" and graph["energy_unavailable_reason"] is None


def test_no_energy_turns_the_windows_off():
    sink = ListSink()
    counter = FakeDevice(wall=True).counter()
    run_sweep(spec(energy=False), sink, energy_counter=counter)
    (p,) = sink.points
    assert p["energy_unavailable_reason"] == ENERGY_OFF
    assert counter.d.reads == 0  # not even the idle window


def test_a_counter_gives_every_timed_mode_energy_after_its_rounds():
    d = FakeDevice(wall=True, wall_power_w=100.0)
    sink = ListSink()
    status = run_sweep(spec(modes=("eager", "compile"), batch_sizes=(1, 2)), sink,
                       energy_counter=d.counter())
    assert status == "done"
    assert len(sink.points) == 4
    for p in sink.points:
        assert p["status"] == "ok", p["message"]
        assert p["energy_unavailable_reason"] is None
        assert p["energy_mj_per_step"] > 0
        assert p["energy_mj_per_step_ci_low"] <= p["energy_mj_per_step"] \
            <= p["energy_mj_per_step_ci_high"]
        ws = p["details"]["energy_windows"]
        # The fake's constant power, within what the windows say their edges may cost (on
        # a loaded host the ticks are seen late: the bound grows, it is not broken).
        bound = max(w["edge_s"] / w["seconds"] for w in ws) + 0.02
        assert p["avg_power_w"] == pytest.approx(100.0, rel=bound)
        idle = p["details"]["energy_idle"]
        assert p["idle_power_w"] == pytest.approx(100.0, rel=idle["edge_s"] / idle["seconds"]
                                                  + 0.02)
        assert len(ws) == ENERGY_PRESETS["quick"].windows
        assert all(w["seconds"] >= ENERGY_PRESETS["quick"].window_s for w in ws)
        assert p["details"]["energy_idle"]["power_w"] > 0
        assert p["details"]["phase_s"]["energy"] > 0  # its own phase, apart from rounds
        assert p["step_ms"] is not None
    compile_ = [p for p in sink.points if p["mode"] == "compile"]
    assert all(p["energy_gain"] is not None for p in compile_)
    assert all(p["energy_gain"] is None for p in sink.points if p["mode"] == "eager")


def test_idle_power_is_read_once_per_sweep(monkeypatch):
    calls = []
    real = sweep_mod.idle_power
    monkeypatch.setattr(sweep_mod, "idle_power",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    run_sweep(spec(batch_sizes=(1, 2, 3)), ListSink(),
              energy_counter=FakeDevice(wall=True).counter())
    assert len(calls) == 1


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_energy_in_a_spec_must_be_a_boolean(value):
    raw = {"workload": "mlp", "batch_sizes": [1], "modes": ["eager"], "energy": value}
    if value is None:
        raw.pop("energy")
        assert check_sweep(raw).energy is True  # default: on
        return
    with pytest.raises(SpecError, match=f"energy {value!r} must be true or false"):
        check_sweep(raw)


def test_cli_no_energy_is_recorded_and_in_the_command(tmp_path, capsys):
    out = tmp_path / "run.json"
    rc = main(["sweep", "--workload", "mlp", "--param", "depth=2", "--param", "width=16",
               "--batch-sizes", "2", "--modes", "eager", "--device", "cpu", "--quick",
               "--no-energy", "--out", str(out), "--no-db"])
    assert rc == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["version"] == 7
    assert doc["measurements"][0]["energy_unavailable_reason"] == ENERGY_OFF
    assert "--no-energy" in doc["run"]["command"]


@pytest.mark.gpu
def test_a_cuda_sweep_reads_nvml_or_says_why():
    sink = ListSink()
    run_sweep(spec(device="cuda", modes=("eager", "cuda-graph"), batch_sizes=(8,)), sink)
    for p in sink.points:
        assert p["status"] == "ok", p["message"]
        if p["energy_unavailable_reason"] is None:  # NVML present: real figures
            assert p["energy_mj_per_step"] > 0 and p["avg_power_w"] > 0
            assert p["details"]["energy_counter"].startswith("nvml")
            # Issue 38: energy per step agrees with the step the page shows.
            assert p["energy_mj_per_step"] == pytest.approx(p["avg_power_w"] * p["step_ms"],
                                                            rel=0.10)
        else:
            assert all(p[f] is None for f in ENERGY_NUMBER_FIELDS)
    graph = next(p for p in sink.points if p["mode"] == "cuda-graph")
    if graph["energy_gain"] is not None:
        assert graph["energy_gain"] > 1  # a launch-bound step: the graph saves energy


def _serve_ctx():
    from runner.core.workloads import resolve
    from runner.serve import scenario as serve

    return serve, serve.make_context(resolve("mlp", {"depth": "2", "width": "8"}), "cpu",
                                     [3, 5, 5, 8], 0, True)


def test_serve_reports_energy_per_request_for_each_strategy():
    from contract.buckets import parse_strategy

    serve, ctx = _serve_ctx()
    counter = FakeDevice(wall=True, wall_power_w=100.0).counter()
    for name in ("eager", "buckets:4/8"):
        r = serve.measure(ctx, parse_strategy(name), counter)
        e = r.details["energy"]
        assert r.status == "ok" and e["energy_mj_per_request"] > 0, e
        assert e["energy_mj_per_request_ci_low"] <= e["energy_mj_per_request"] \
            <= e["energy_mj_per_request_ci_high"]
        assert e["avg_power_w"] == pytest.approx(100.0, rel=0.05)
        assert len(e["windows"]) == ENERGY_PRESETS["quick"].windows
        serve.reset(ctx.device)
    r = serve.measure(ctx, parse_strategy("eager"), "no CUDA device: this run is on cpu")
    assert r.details["energy"] == {"unavailable_reason": "no CUDA device: this run is on cpu"}


def test_cli_table_shows_energy_columns_or_why_not():
    from contract.energy import Energy
    from contract.measurement import Measurement
    from runner.ops.commands.sweep import format_table

    def point(mode, step, mj=None):
        m = Measurement(mode, 8)
        m.timing.step_ms = step
        m.energy.set(Energy(energy_mj_per_step=mj) if mj else Energy.unavailable(ENERGY_OFF))
        return m

    text = format_table([point("eager", 0.9, 107.0), point("cuda-graph", 0.137, 17.1)],
                        ("eager", "cuda-graph"))
    assert "eager mJ" in text and "17.1" in text and "mJ: energy per step" in text
    text = format_table([point("eager", 0.9), point("cuda-graph", 0.137)],
                        ("eager", "cuda-graph"))
    assert " mJ" not in text and f"energy: not measured: {ENERGY_OFF}" in text


def test_energy_per_step_is_the_windows_power_times_the_timed_step():
    """Issue 38: on the H200 the windows' own energy over their own steps said 216.7 mJ a
    step at 126.4 W (1.71 ms a step) for a point whose timed step was 1.15 ms: the
    windows' syncs slowed the step. The stored figure is the power times the timed step,
    within 10% by the issue's bar, and here exactly, for every point; the gain is eager's
    power over the mode's times the speedup the point shows."""
    d = FakeDevice(wall=True, wall_power_w=100.0)
    sink = ListSink()
    run_sweep(spec(modes=("eager", "compile"), batch_sizes=(1, 2)), sink,
              energy_counter=d.counter())
    by = {(p["batch_size"], p["mode"]): p for p in sink.points}
    for p in sink.points:
        assert p["energy_mj_per_step"] == pytest.approx(p["avg_power_w"] * p["step_ms"],
                                                        rel=1e-9)
        assert p["energy_mj_per_step_ci_low"] <= p["energy_mj_per_step"] \
            <= p["energy_mj_per_step_ci_high"]
        if p["mode"] == "compile":
            eager = by[(p["batch_size"], "eager")]
            want = p["speedup"] * eager["avg_power_w"] / p["avg_power_w"]
            assert p["energy_gain"] == pytest.approx(want, rel=1e-9)
            assert p["energy_gain_ci_low"] <= p["energy_gain"] <= p["energy_gain_ci_high"]
