"""hf-causal-lm and timm on a real GPU (the decode step in all four modes, prefill and timm
captured as one graph), and a planted out-of-bounds
index that loses the CUDA context mid-sweep (run on the lent H200:
pytest -m gpu tests/runner/core/test_gpu_models.py).

Small shapes keep compile time down; what is asserted holds whatever the GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from runner.core.sweep import SweepSpec, run_sweep
from runner.ops.sinks import MemorySink
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu
MODES = ("eager", "compile", "reduce-overhead", "cuda-graph")


def sweep(workload: str, params: dict, sizes: tuple[int, ...], modes=MODES) -> dict:
    sink = MemorySink()
    spec = SweepSpec(workload=workload, params=params, batch_sizes=sizes, modes=modes,
                     device="cuda", timing="quick")
    assert run_sweep(spec, sink) == "done"
    points = {(m.mode, m.batch_size): m.to_json() for m in sink.measurements}
    for key, m in points.items():
        assert m["status"] == "ok", (key, m["message"], m["details"].get("traceback"))
        assert m["correct"] is True, (key, m["max_abs_err"], m["details"].get("rel_err"))
    return points


def check_graphs(points: dict) -> None:
    for (mode, _), m in points.items():
        if mode in ("eager", "compile"):
            assert m["graph_launches_per_step"] == 0, mode
        else:
            assert m["graph_launches_per_step"] >= 1, mode
            # A graph break in transformers' code reads "partial": graphs still replay,
            # with eager code between them (a finding for the page, not a failure).
            ok = ("replay",) if mode == "cuda-graph" else ("replay", "partial")
            assert m["cudagraph_status"] in ok, (mode, m["cudagraph_status"], m["message"])
    eager = [m for (mode, _), m in points.items() if mode == "eager"]
    assert all(m["host_launches_per_step"] > 20 for m in eager)  # per-layer launches
    for (mode, _), m in points.items():
        if mode == "cuda-graph":
            assert m["host_launches_per_step"] <= 2, m["host_launches_per_step"]


@pytest.fixture(scope="module")
def decode():
    return sweep("hf-causal-lm", {"model": "tiny-llama"}, (4,))


def test_hf_decode_step_in_all_four_modes_matches_eager_and_replays(decode):
    check_graphs(decode)
    # The rewound cache: thousands of timed steps, no device-side assert, one slot.
    assert decode[("cuda-graph", 4)]["samples"] > 0


# Prefill and timm against the manual capture only, to fit the device time: the compiled
# modes of a timm model and of the decode step are in the H200 sample sweeps
# (bench/device_samples.sh), whose points carry `correct` as these do.
def test_hf_prefill_captures_as_one_graph():
    check_graphs(sweep("hf-causal-lm", {"model": "tiny-llama", "phase": "prefill",
                                        "seq": "32", "layers": "2"}, (2,),
                       modes=("eager", "cuda-graph")))


def test_timm_model_captures_as_one_graph():
    pytest.importorskip("timm")
    points = sweep("timm", {"model": "resnet18"}, (8,), modes=("eager", "cuda-graph"))
    assert points[("cuda-graph", 8)]["graph_launches_per_step"] >= 1
    assert points[("eager", 8)]["graph_launches_per_step"] == 0


@pytest.fixture
def cli(tmp_path, spawn):
    def run(*args):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        p = spawn([sys.executable, "-m", "runner", *args], cwd=tmp_path,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        out, err = p.communicate(timeout=600)
        return p.returncode, out, err

    return run


def test_planted_out_of_bounds_index_keeps_points_and_runs_the_rest_fresh(cli, tmp_path):
    out_file = tmp_path / "run.json"
    rc, out, err = cli("sweep", "--workload", "tests.fatal_models:oob", "--param", "at=8",
                       "--batch-sizes", "1,8,16", "--modes", "eager,cuda-graph",
                       "--device", "cuda", "--quick", "--no-db", "--out", str(out_file))
    assert rc == 1, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "CUDA context lost at batch 8" in errors[0], err[-2000:]
    doc = json.loads(out_file.read_text())
    assert doc["run"]["status"] == "failed"
    by = {(m["mode"], m["batch_size"]): m for m in doc["measurements"]}
    assert len(by) == 6
    assert all(by[(mode, 1)]["status"] == "ok" for mode in ("eager", "cuda-graph"))
    hit = [by[(mode, 8)] for mode in ("eager", "cuda-graph")]
    assert all(m["status"] in ("error", "skipped") for m in hit)
    assert any(m["status"] == "error" and "device-side assert" in m["message"] for m in hit)
    for mode in ("eager", "cuda-graph"):  # a fresh process, a fresh context
        m = by[(mode, 16)]
        assert m["status"] == "ok" and m["details"]["rescued"], m["message"]
