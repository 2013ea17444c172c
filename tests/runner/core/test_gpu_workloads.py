"""train-step and kernel-chain on a real GPU (run on the lent H200:
pytest -m gpu tests/runner/core/test_gpu_workloads.py).

Launches are counted as tests/runner/core/test_gpu_runner.py counts them: from the point's profiled
pass (runner/core/profiling.py), per step. Small shapes keep compile time down; what is
asserted holds whatever the GPU.
"""

from __future__ import annotations

import pytest

from contract.limits import TRAIN_TOLERANCE
from runner.core.sweep import SweepSpec, run_sweep
from runner.core.training import CHECK_STEPS
from runner.ops.sinks import MemorySink

pytestmark = pytest.mark.gpu

KERNELS = 20


def sweep(**kw) -> dict[str, dict]:
    sink = MemorySink()
    spec = dict(batch_sizes=(8,), device="cuda", timing="quick", **kw)
    assert run_sweep(SweepSpec(**spec), sink) == "done"
    points = {m.mode: m.to_json() for m in sink.measurements}
    for mode, m in points.items():
        assert m["status"] == "ok", (mode, m["message"], m["details"].get("traceback"))
    return points


@pytest.fixture(scope="module")
def train():
    return sweep(workload="train-step", params={"depth": "4", "width": "64"},
                 modes=("eager", "reduce-overhead", "cuda-graph"))


@pytest.fixture(scope="module")
def train_block():
    # Fresh leaves matter most where eager ran first in the process (cuda-graph's
    # AccumulateGrad nodes are then new, not eager's default-stream ones).
    return sweep(workload="train-step", params={"model": "transformer", "width": "64",
                                                "heads": "4", "seq": "8"},
                 modes=("eager", "cuda-graph"))


@pytest.fixture(scope="module")
def chain():
    return sweep(workload="kernel-chain", params={"kernels": str(KERNELS)},
                 modes=("eager", "cuda-graph"))


def test_train_step_cuda_graph_replays_one_graph_per_step(train):
    m = train["cuda-graph"]
    assert m["graph_launches_per_step"] == 1, m["details"]
    assert m["cudagraph_status"] == "replay"
    # The whole step (forward, backward, optimizer) is in the graph: what the host still
    # launches is far less than eager's kernel-by-kernel step.
    assert m["host_launches_per_step"] < train["eager"]["host_launches_per_step"] / 4
    assert m["graph_pool_bytes"] > 0


def test_train_step_cuda_graph_matches_eager_parameters_after_ten_steps(train):
    for mode in ("cuda-graph", "reduce-overhead"):
        m = train[mode]
        assert m["details"]["correct_after_steps"] == CHECK_STEPS == 10
        assert m["correct"] is True, (mode, m["max_abs_err"], m["details"]["rel_err"])
        assert m["details"]["rel_err"] <= TRAIN_TOLERANCE["float32"]
    assert train["eager"]["correct"] is True


def test_train_step_transformer_block_captures_whole_step_after_eager(train_block):
    m = train_block["cuda-graph"]
    assert m["graph_launches_per_step"] == 1 and m["cudagraph_status"] == "replay"
    assert m["correct"] is True, (m["max_abs_err"], m["details"]["rel_err"])


def test_train_step_reduce_overhead_records_forward_and_backward_graphs(train):
    m = train["reduce-overhead"]
    trees = m["details"]["cudagraph_trees"]
    assert "error" not in trees, trees
    assert trees["forward"] >= 1 and trees["backward"] >= 1, trees
    assert trees["pools"] == 1, trees  # the tree shares one pool across its graphs
    assert m["graph_launches_per_step"] >= 2, m["details"]  # forward + backward replays
    assert m["cudagraph_status"] == "replay", m["message"]
    assert m["graph_pool_bytes"] > 0


def test_train_step_reduce_overhead_has_the_separate_pools_reference(train):
    d = train["reduce-overhead"]["details"]
    assert "after_error" not in d, d.get("after_error")
    ref = d["separate_graphs"]
    assert ref["forward_pool_bytes"] > 0 and ref["backward_pool_bytes"] > 0
    assert ref["sum_bytes"] == ref["forward_pool_bytes"] + ref["backward_pool_bytes"]


def test_kernel_chain_eager_launches_one_kernel_per_link(chain):
    m = chain["eager"]
    assert m["host_launches_per_step"] == KERNELS
    assert m["gpu_kernels_per_step"] == KERNELS
    assert m["graph_launches_per_step"] == 0


def test_kernel_chain_cuda_graph_is_one_graph_launch(chain):
    m = chain["cuda-graph"]
    assert m["graph_launches_per_step"] == 1
    assert m["host_launches_per_step"] <= 1  # at most the input copy
    assert m["gpu_kernels_per_step"] >= KERNELS  # the same kernels, replayed
    assert m["correct"] is True and m["max_abs_err"] == 0
