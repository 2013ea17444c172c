"""The runner on a real GPU (run on the lent H200:
pytest -m gpu tests/runner/core/test_gpu_runner.py).

Small models keep compile time down; what is asserted is what the figures must show
whatever the GPU: graph launches where graphs run and none where they do not, outputs
equal to eager, graph memory in private pools, isolation between points, and skips
reported with their reason.
"""

from __future__ import annotations

import pytest

from runner.core.sweep import SweepSpec, run_sweep

pytestmark = pytest.mark.gpu

SMALL = {"depth": "4", "width": "64"}
MODES = ("eager", "compile", "reduce-overhead", "cuda-graph")


class ListSink:
    def __init__(self):
        self.kept: list = []  # the sweep's own Measurements (a later pass adds rounds)

    def start(self, environment, run):
        self.env, self.run = environment, run

    def point(self, measurement):
        self.kept.append(measurement)

    def finish(self, status):
        self.status = status

    @property
    def points(self) -> list[dict]:  # the stored form, as a bundle holds it
        return [m.to_json() for m in self.kept]


def sweep(**kw) -> ListSink:
    base = dict(workload="mlp", params=SMALL, batch_sizes=(8,), modes=MODES,
                device="cuda", timing="quick")
    sink = ListSink()
    assert run_sweep(SweepSpec(**{**base, **kw}), sink) == "done"
    return sink


@pytest.fixture(scope="module")
def four_modes():
    sink = sweep()
    return sink, {m["mode"]: m for m in sink.points}


def test_environment_names_the_gpu(four_modes):
    env = four_modes[0].env
    assert env.device == "cuda" and env.gpu_name and env.sm_count > 0
    assert env.gpu_memory_bytes > 0 and env.torch_version


def test_every_mode_measures_and_matches_eager(four_modes):
    for mode, m in four_modes[1].items():
        assert m["status"] == "ok", (mode, m["message"], m["details"].get("traceback"))
        assert m["correct"] is True, (mode, m["max_abs_err"])
        assert m["max_abs_err"] < 1e-3
        assert m["step_ms"] > 0 and m["latency_ms"] > 0 and m["gpu_busy_ms"] > 0
        assert m["gpu_kernels_per_step"] >= 8  # 4 x (matmul + relu), fused or not
        assert m["details"]["clocks_before"] and m["details"]["clocks_after"]


def test_graph_launches_only_where_graphs_run(four_modes):
    ms = four_modes[1]
    assert ms["eager"]["graph_launches_per_step"] == 0
    assert ms["eager"]["host_launches_per_step"] >= 8
    assert ms["compile"]["graph_launches_per_step"] == 0
    for mode in ("reduce-overhead", "cuda-graph"):
        assert ms[mode]["graph_launches_per_step"] >= 1, mode
        assert ms[mode]["cudagraph_status"] == "replay", (mode, ms[mode]["message"])
        # The graph replaces the per-kernel launches: at most the input copy remains.
        assert ms[mode]["host_launches_per_step"] < ms["eager"]["host_launches_per_step"]


def test_graph_memory_is_attributed_to_private_pools(four_modes):
    ms = four_modes[1]
    for mode in ("reduce-overhead", "cuda-graph"):
        assert ms[mode]["graph_pool_bytes"] > 0, mode
    for mode in ("eager", "compile"):
        assert ms[mode]["graph_pool_bytes"] == 0, mode
    for m in ms.values():
        assert m["peak_allocated_bytes"] > 0
        # What the mode keeps includes its pools.
        assert m["reserved_delta_bytes"] >= m["graph_pool_bytes"]


def test_every_mode_starts_its_memory_pass_clean(four_modes):
    """Issue 44: no mode starts with anything an earlier mode or point left behind: no
    private pool and no allocated byte beyond the model and its inputs."""
    for mode, m in four_modes[1].items():
        d = m["details"]
        assert d["leftover_private_pools_at_m0"] == 0, (mode, d)
        assert d["leftover_bytes_at_m0"] == 0, (mode, d)
        assert d.get("memory_error") is None, (mode, d["memory_error"])


def test_memory_cost_is_what_a_mode_keeps_beyond_eager(four_modes):
    ms = four_modes[1]
    eager = ms["eager"]["reserved_delta_bytes"]
    assert ms["eager"]["memory_cost_bytes"] == 0
    for mode, m in ms.items():
        assert m["details"]["eager_reserved_delta_bytes"] == eager, mode
        assert m["memory_cost_bytes"] == m["reserved_delta_bytes"] - eager, mode


def test_memory_cost_holds_across_sweeps_cold_or_warm(tmp_path, monkeypatch):
    """The same sweep twice in one process, the first with an empty Inductor cache (a cold
    compile autotunes; its benchmarking buffer used to land in reduce-overhead's pool),
    the second warm: every point's memory cost and pool agree within 2 MiB, and every
    point of both starts clean."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    runs = [sweep(batch_sizes=(1, 8)) for _ in range(2)]
    by = [{(m["mode"], m["batch_size"]): m for m in r.points} for r in runs]
    assert by[0].keys() == by[1].keys() and len(by[0]) == 8
    for key, a in by[0].items():
        b = by[1][key]
        for m in (a, b):
            assert m["details"]["leftover_private_pools_at_m0"] == 0, key
            assert m["details"]["leftover_bytes_at_m0"] == 0, key
        for f in ("memory_cost_bytes", "graph_pool_bytes"):
            assert abs(a[f] - b[f]) <= 2 << 20, (key, f, a[f], b[f])


def test_twelfth_size_agrees_with_a_fresh_compile():
    """The recompile-limit trap: through one compiled callable, sizes past the 8th fall
    back to eager. Each point is isolated, so size 12 must look like a fresh compile.

    On-disk caches (FX graph, autotuning) survive in-process resets by design, and a
    cold compile's autotuning leaves an L2-sized benchmarking buffer in the graph pool
    (seen on the H200: 94 MiB cold vs 34 MiB warm). So size 12 is compiled once first,
    and both compared points are warm.
    """
    params = {"depth": "2", "width": "32"}
    one = dict(params=params, batch_sizes=(12,), modes=("reduce-overhead",))
    sweep(**one)  # size 12 into the on-disk caches
    swept = sweep(params=params, batch_sizes=tuple(range(1, 13)), modes=("reduce-overhead",))
    assert [m["status"] for m in swept.points] == ["ok"] * 12
    fresh = sweep(**one).points[0]
    last = swept.points[-1]
    for m in (last, fresh):
        assert m["cudagraph_status"] == "replay", m["message"]
        assert m["details"]["compile"]["unique_graphs"] >= 1  # compiled, not fallen back
        assert m["details"]["leftover_private_pools_at_m0"] == 0
    for m in swept.points:  # every size compiled: no recompile-limit fallback
        assert m["details"]["compile"]["unique_graphs"] >= 1, m["batch_size"]
        assert m["graph_launches_per_step"] >= 1, m["batch_size"]
    for key in ("graph_launches_per_step", "host_launches_per_step",
                "gpu_kernels_per_step"):
        assert last[key] == fresh[key], key
    # What a recompile-limit fallback changes is the work, not the host: a fallen-back
    # size runs eager kernels (more of them, no graph) and its GPU busy time moves with
    # them. The step time of this launch-bound point follows the host's launch cost
    # instead (0.129 against 0.079 ms in one H200 call, equal in the next), so it is not
    # what this test compares; GPU busy time is (within 25%: one profiled step each).
    assert last["gpu_busy_ms"] == pytest.approx(fresh["gpu_busy_ms"], rel=0.25)
    assert last["graph_pool_bytes"] == fresh["graph_pool_bytes"], (
        last["details"]["m1"], fresh["details"]["m1"], last["details"]["compile"],
        fresh["details"]["compile"])


def test_mutated_input_is_reported_skipped_with_the_reason():
    m = sweep(workload="tests.gpu_models:mutated_input", params={},
              modes=("reduce-overhead",)).points[0]
    assert m["status"] == "ok", m["message"]
    assert m["cudagraph_status"] == "skipped"
    assert m["graph_launches_per_step"] == 0
    assert "mutat" in m["message"].lower(), m["message"]
    assert m["correct"] is True


def test_oom_is_an_error_point_and_the_sweep_goes_on():
    # A 65536-token KV cache for 4096 sequences is hundreds of GiB: the allocation
    # fails on any GPU. The next point (1 sequence) must still run.
    params = {"layers": "1", "kv_len": "65536", "dtype": "float32"}
    pts = sweep(workload="transformer-decode", params=params, batch_sizes=(4096, 1),
                modes=("eager",)).points
    assert pts[0]["status"] == "error"
    assert "out of memory" in pts[0]["message"].lower(), pts[0]["message"]
    assert pts[1]["status"] == "ok" and pts[1]["correct"] is True, pts[1]["message"]


def test_interleaved_modes_run_their_own_code_as_if_alone(four_modes):  # after: warm
    """Four modes prepared side by side on one model and timed in rounds: each still runs
    its own code. Kernel counts and graph launches equal a point measured alone, GPU busy
    time is close, and a graph mode's (GPU-bound) step agrees within a few percent."""
    # Measured again rather than taken from the fixture: the fixture compiled first in
    # this process, and a cold compile autotunes inside the graph tree's pool (a 60 MiB
    # L2-sized scratch buffer, seen on the H200), which a warm one does not.
    together = {m["mode"]: m for m in sweep().points}
    for mode in MODES:
        alone = sweep(modes=(mode,)).points[0]
        t = together[mode]
        assert alone["status"] == t["status"] == "ok", (mode, alone["message"], t["message"])
        for key in ("gpu_kernels_per_step", "graph_launches_per_step",
                    "host_launches_per_step"):
            assert t[key] == alone[key], (mode, key, t[key], alone[key])
        assert t["cudagraph_status"] == alone["cudagraph_status"], mode
        assert t["gpu_busy_ms"] == pytest.approx(alone["gpu_busy_ms"], rel=0.10), mode
        if mode in ("reduce-overhead", "cuda-graph"):
            assert t["graph_pool_bytes"] == alone["graph_pool_bytes"], mode
        else:
            assert t["graph_pool_bytes"] == alone["graph_pool_bytes"] == 0, mode


def test_rounds_carry_intervals_and_the_host_launch_cost(four_modes):
    ms = four_modes[1]
    n = {m["samples"] for m in ms.values()}
    assert len(n) == 1 and n.pop() >= 6  # every mode timed in the same rounds
    for mode, m in ms.items():
        assert m["step_ms_ci_low"] <= m["step_ms"] <= m["step_ms_ci_high"], mode
        assert m["launch_us"] > 0 and len(m["launch_us_rounds"]) == m["samples"]
        assert m["stop_reason"] in ("converged", "budget")
        if mode != "eager":
            assert m["speedup_ci_low"] <= m["speedup"] <= m["speedup_ci_high"], mode
    assert ms["reduce-overhead"]["details"]["vs_compile"]["median"] > 0


def test_graph_step_agrees_with_the_same_mode_timed_alone_in_its_own_rounds():
    """GPU-bound figures need no pairing: at a batch size where the graph step is GPU
    bound, cuda-graph's median under interleaving equals its median alone within 1%."""
    params = {"depth": "8", "width": "1024"}
    kw = dict(params=params, batch_sizes=(4096,), timing="standard")
    together = {m["mode"]: m for m in sweep(modes=("eager", "cuda-graph"), **kw).points}
    alone = sweep(modes=("cuda-graph",), **kw).points[0]
    assert together["cuda-graph"]["step_ms"] == pytest.approx(alone["step_ms"], rel=0.01)
    assert together["cuda-graph"]["speedup_ci_high"] / together["cuda-graph"]["speedup"] \
        - 1 <= 0.02  # GPU-bound: the speedup's interval is tight


def test_a_cuda_graph_keeps_the_same_bytes_whichever_stream_comes_next():
    """torch.cuda.Stream() deals out a pool of streams in turn. Whichever turn a point
    comes at, its cuda-graph mode keeps the same bytes: its warm-up never runs on the
    capture stream (whose cuBLAS workspace would then be missing from the graph's pool:
    a memory cost of 4 MiB against 38 MiB on the H100). 33 turns go round a pool of 32."""
    import torch

    from runner.core import memory, modes
    from runner.core.point import reset_state
    from runner.core.workloads import resolve

    model, make_input = resolve("mlp", SMALL).build("cuda")
    x = make_input(1)
    kept = []
    with torch.no_grad():  # as a sweep's point runs it
        for _ in range(33):
            torch.cuda.Stream()  # the next stream of the pool goes to nobody
            m0 = memory.clean("cuda")
            prepared = modes.prepare("cuda-graph", model, x, "cuda")
            prepared.step()
            kept.append(memory.released("cuda").reserved - m0.reserved)
            del prepared
            reset_state("cuda")
    assert len(set(kept)) == 1, kept
    warm, capture = modes.graph_streams()
    assert warm.cuda_stream != capture.cuda_stream


def test_later_batch_sizes_find_their_compile_on_disk(tmp_path, monkeypatch):
    """On empty Inductor and Triton caches (a fresh host), the sweep's helpers compile
    the later batch sizes while it sets up the first (runner/core/compile_ahead.py): its
    compiled modes miss the cache at the first batch size and hit it at every later one,
    and the figures still hold (every point ok and matching eager)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", "1")
    points = sweep(batch_sizes=(1, 8, 64)).points
    by = {(m["mode"], m["batch_size"]): m for m in points}
    assert all(m["status"] == "ok" and m["correct"] for m in points)
    for mode in ("compile", "reduce-overhead"):
        assert by[(mode, 1)]["details"]["compile"]["fxgraph_cache_miss"] >= 1
        for b in (8, 64):
            c = by[(mode, b)]["details"]["compile"]
            assert c["fxgraph_cache_hit"] >= 1 and c["fxgraph_cache_miss"] == 0, (mode, b, c)
