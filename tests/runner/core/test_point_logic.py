"""Pure parts of a point's bookkeeping: launch counting, pool attribution, graph status."""

from __future__ import annotations

import pytest

from contract.measurement import CompileCounters
from runner.core.memory import Kept, MemState, figures, pool_bytes
from runner.core.point import compare, cudagraph_status
from runner.core.profiling import Event, ProfilingError, count


def ev(name, gpu=False, start=0.0, end=0.0):
    return Event(name, gpu, start, end)


def test_count_splits_host_launches_graph_launches_and_kernels():
    events = [ev("cudaLaunchKernel"), ev("cudaLaunchKernelExC"), ev("cuLaunchKernel"),
              ev("cudaGraphLaunch"), ev("cudaGraphLaunch_v10000"), ev("cudaMemcpyAsync"),
              ev("aten::mm"), ev("void gemm_kernel<...>", True, 0, 10),
              ev("triton_poi_fused_relu_0", True, 5, 12),  # overlaps the first
              ev("Memcpy DtoD (Device -> Device)", True, 20, 22)]
    c = count(events, steps=2)
    assert c.host_launches_per_step == 1.5
    assert c.graph_launches_per_step == 1.0
    assert c.gpu_kernels_per_step == 1.0  # copies are GPU work but not kernels
    assert c.gpu_busy_ms == pytest.approx((10 + 7 + 2) / 1e3 / 2)
    assert c.gpu_busy_union_ms == pytest.approx((12 + 2) / 1e3 / 2)
    assert c.host_copies_per_step == 0.5


def test_gpu_annotations_are_not_kernels():
    # ProfilerStep#N and Inductor's "## Call CompiledFxGraph ##" ranges sit on the GPU
    # timeline spanning the step's kernels; counted as work they double the busy time.
    events = [ev("cudaLaunchKernel"), ev("k", True, 0, 2),
              ev("ProfilerStep#4", True, 0, 50), Event("## Call CompiledFxGraph f ##",
                                                         True, 0, 40),
              Event("my_range", True, 0, 30, annotation=True)]
    c = count(events, steps=1)
    assert c.gpu_kernels_per_step == 1 and c.gpu_busy_ms == pytest.approx(0.002)


def test_a_trace_without_kernels_is_an_error_not_zero():
    with pytest.raises(ProfilingError):
        count([ev("cudaLaunchKernel"), ev("Memcpy HtoD", True, 0, 1)], steps=1)


def test_pool_attribution_by_segment_pool_id():
    snap = [{"segment_pool_id": (0, 0), "total_size": 100},
            {"segment_pool_id": (1, 2), "total_size": 30},
            {"segment_pool_id": [1, 2], "total_size": 10},
            {"total_size": 5}]
    assert pool_bytes(snap) == {(0, 0): 105, (1, 2): 40}


def test_a_modes_memory_is_what_it_keeps_beyond_eager():
    """The pass's figures (issue 44): the mode's kept bytes over its clean start, its
    graph pools apart, the cost its kept bytes less eager's, and any leftover at the
    clean start named (never charged)."""
    base = MemState(10, 100, 1000, {(0, 0): 100})
    m0 = MemState(10, 100, 1000, {(0, 0): 100})
    m1 = MemState(50, 168, 1070, {(0, 0): 134, (1, 2): 34})  # a 34 pool, 34 in default
    f = figures(Kept(m0, m1, peak=60), base, eager=32)
    assert f.graph_pool_bytes == 34 and f.reserved_delta_bytes == 68
    assert f.memory_cost_bytes == 36 and f.eager_reserved_delta_bytes == 32
    assert f.peak_allocated_bytes == 50 and f.device_used_delta_bytes == 70
    assert f.leftover_private_pools_at_m0 == 0 and f.leftover_bytes_at_m0 == 0
    # A clean start that holds an earlier pool and more allocated bytes says so, and the
    # old pool is not charged to this mode.
    dirty = MemState(14, 107, 1007, {(0, 0): 100, (9, 9): 7})
    g = figures(Kept(dirty, MemState(14, 141, 1041, {(0, 0): 100, (9, 9): 7, (1, 3): 34}),
                     peak=20), base, eager=None)
    assert g.graph_pool_bytes == 34 and g.memory_cost_bytes is None
    assert g.leftover_private_pools_at_m0 == 1 and g.leftover_bytes_at_m0 == 4


@pytest.mark.parametrize("mode,launches,watch,expected", [
    ("eager", 0, CompileCounters(), "n/a"),
    ("compile", 0, CompileCounters(unique_graphs=1), "n/a"),
    ("compile", 0, CompileCounters(unique_graphs=0), "eager-fallback"),
    ("reduce-overhead", 1, CompileCounters(unique_graphs=1), "replay"),
    ("reduce-overhead", 0, CompileCounters(
        unique_graphs=1, cudagraph_skips=1,
        skip_messages=["skipping cudagraphs due to mutated inputs"]),
     "skipped"),
    # The counter says nothing, the profiler says no graph ran: skipped all the same.
    ("reduce-overhead", 0, CompileCounters(unique_graphs=1), "skipped"),
    ("reduce-overhead", 2, CompileCounters(unique_graphs=2, graph_breaks=1), "partial"),
    ("cuda-graph", 1, CompileCounters(), "replay"),
])
def test_cudagraph_status_trusts_the_profiler(mode, launches, watch, expected):
    status, reason = cudagraph_status(mode, launches, watch)
    assert status == expected
    if expected in ("skipped", "partial", "eager-fallback"):
        assert reason


def test_skip_reason_is_the_logged_message():
    _, reason = cudagraph_status("reduce-overhead", 0, CompileCounters(
        unique_graphs=1, skip_messages=["skipping cudagraphs due to mutated inputs"]))
    assert "mutated inputs" in reason


def test_compare_reports_error_relative_to_output_scale():
    import torch

    ref = torch.tensor([[10.0, -20.0]])
    err, tol, rel = compare(ref + torch.tensor([[0.0, 0.002]]), ref)
    assert err == pytest.approx(0.002, rel=1e-3) and rel == pytest.approx(1e-4, rel=1e-3)
    assert tol == 1e-4
    with pytest.raises(RuntimeError, match="shape"):
        compare(torch.zeros(2), torch.zeros(3))
    err, _, _ = compare((ref, {"a": ref * 2}), (ref, {"a": ref * 2}))
    assert err == 0.0


def test_compare_allows_tf32_rounding_in_float32_only():
    import torch

    ref = torch.tensor([[10.0, -20.0]])
    off = ref + torch.tensor([[0.0, 0.02]])  # 1e-3 of the output's scale
    _, tol, rel = compare(off, ref)
    assert rel > tol  # plain float32: a fault
    _, tol, rel = compare(off, ref, tf32=True)
    assert tol == 2e-3 and rel <= tol  # TF32 convolutions: rounding
    _, tol, rel = compare(ref + torch.tensor([[0.0, 0.2]]), ref, tf32=True)
    assert rel > tol  # 1e-2 is still a fault
    half = ref.to(torch.bfloat16)
    _, tol, _ = compare(half, half, tf32=True)
    assert tol == 5e-2  # other dtypes keep their own tolerance
