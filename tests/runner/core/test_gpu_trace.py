"""The kept step timeline against the profiler's own figures, on a real GPU (issue 12; run
on the lent H200: pytest -m gpu tests/runner/core/test_gpu_trace.py).

The seed MLP at its defaults (depth 32: 32 x (Linear + ReLU)) launches 64 kernels per
step in eager (docs/MEASUREMENT.md, "Launch counting and GPU busy time"); a manual CUDA graph
replays the same 64 with one cudaGraphLaunch. Batch 8 is the article's picture.
"""

from __future__ import annotations

import json

import pytest

from contract import bundle as fmt
from contract import trace as tr
from runner.core.sweep import SweepSpec, run_sweep
from runner.ops.sinks import MemorySink

pytestmark = pytest.mark.gpu

KERNELS = 64  # 2 x depth 32


@pytest.fixture(scope="module")
def points():
    # The standard preset profiles 10 steps: the kept one is chosen among 9.
    spec = SweepSpec(workload="mlp", batch_sizes=(8,), modes=("eager", "cuda-graph"),
                     device="cuda", timing="standard")
    sink = MemorySink()
    assert run_sweep(spec, sink) == "done"
    return {m.mode: m.to_json() for m in sink.measurements}


def kinds(trace: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in tr.events(trace):
        out[e.kind] = out.get(e.kind, 0) + 1
    return out


def describe(m: dict) -> str:
    t = m["trace"]
    return (f"{m['mode']}: kinds {kinds(t)}, match {t['match']}, step {t['step']} of "
            f"{t['steps']}, host {m['host_launches_per_step']}, graph "
            f"{m['graph_launches_per_step']}, kernels {m['gpu_kernels_per_step']}, "
            f"details {m['details'].get('trace_error')}")


def test_eager_shows_64_kernels_and_64_host_launches(points):
    m = points["eager"]
    assert m["status"] == "ok", m["message"]
    assert m["trace"] is not None, m["details"].get("trace_error")
    k = kinds(m["trace"])
    assert k.get("kernel") == KERNELS and k.get("launch") == KERNELS, describe(m)
    assert k.get("graph", 0) == 0, describe(m)
    assert m["trace"]["dropped"] == 0 and m["trace"]["step"] > 1
    assert m["gpu_kernels_per_step"] == KERNELS, describe(m)  # the counts agree


def test_cuda_graph_shows_64_kernels_and_one_graph_launch(points):
    m = points["cuda-graph"]
    assert m["status"] == "ok", m["message"]
    assert m["trace"] is not None, m["details"].get("trace_error")
    k = kinds(m["trace"])
    assert k.get("kernel") == KERNELS and k.get("graph") == 1, describe(m)
    assert k.get("launch", 0) == m["host_launches_per_step"], describe(m)


@pytest.mark.parametrize("mode", ["eager", "cuda-graph"])
def test_kernel_time_of_the_step_equals_the_points_gpu_busy_time(points, mode):
    m = points[mode]
    kept_ms = tr.kernel_sum_us(m["trace"]) / 1e3
    assert kept_ms == pytest.approx(m["gpu_busy_ms"], rel=0.01), describe(m)
    g = tr.gpu_idle(m["trace"])
    assert 0 <= g.idle_us < g.span_us and g.busy_us <= kept_ms * 1e3 + 1e-6


@pytest.mark.parametrize("mode", ["eager", "cuda-graph"])
def test_the_exported_file_loads_back_with_one_x_event_per_event(points, mode, tmp_path):
    m = points[mode]
    fmt.check_measurement(m)  # what the sweep stores passes the bundle's bounds
    path = tmp_path / f"{mode}.trace.json"
    path.write_text(json.dumps(tr.chrome_trace([(f"{mode} b8", m["trace"])])))
    doc = json.loads(path.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(m["trace"]["cpu"]) + len(m["trace"]["gpu"])
    assert sum(e["cat"] == "kernel" for e in xs) == KERNELS
