"""Serve strategies on a real GPU (run on the lent H200): bucketed graphs replay and match
eager, reduce-overhead records one graph per new size."""

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture
def ctx_for():
    from runner.core.workloads import resolve
    from runner.serve import scenario as serve

    w = resolve("mlp", {"depth": "4", "width": "64"})

    def make(stream):
        return serve.make_context(w, "cuda", stream, 0, True)

    yield make
    serve.reset("cuda")


def test_bucketed_graphs_replay_and_match_eager(ctx_for):
    import torch

    from contract import buckets
    from runner.core.profiling import profile_step
    from runner.serve import scenario as serve

    stream = [3, 11, 16, 40, 1, 9, 33, 8]
    ctx = ctx_for(stream)
    s = buckets.parse_strategy("buckets:4/8/16/32")
    r = serve.measure(ctx, s)
    assert r.status == "ok" and r.execution == "cuda-graph", r.message
    assert r.correct is True and r.max_abs_err < 1e-3
    assert r.graphs == 4 and r.graph_pool_bytes > 0
    assert r.graph_launches_per_request > 0  # the profiler saw cudaGraphLaunch
    assert r.fallback_rate == pytest.approx(2 / 8)  # 40 and 33 run eager
    d = r.details
    assert d["capture_order"] == [32, 16, 8, 4]  # largest first
    assert d["pool_bytes_by_bucket"]["32"] > 0
    assert d["compiles_in_replay"] == 0
    # One request that hits a bucket is one graph launch and no kernel launch from the
    # host; one that falls back is all host launches.
    with torch.no_grad():
        exe = serve.STRATEGIES["buckets"](ctx, s)
        hit, _ = profile_step(lambda: exe.serve(ctx.inputs[11]), 3)
        miss, _ = profile_step(lambda: exe.serve(ctx.inputs[40]), 3)
    assert hit.graph_launches_per_step == 1 and hit.host_launches_per_step == 0
    assert miss.graph_launches_per_step == 0 and miss.host_launches_per_step >= 8


def test_reduce_overhead_records_a_graph_per_new_size(ctx_for):
    from contract import buckets
    from runner.serve import scenario as serve

    s = buckets.parse_strategy("reduce-overhead")
    few = serve.measure(ctx_for([8, 8, 24, 24]), s)
    serve.reset("cuda")
    many = serve.measure(ctx_for([8, 24, 5, 13, 31, 17, 8, 24]), s)
    for r in (few, many):
        assert r.status == "ok" and r.correct is True, r.message
        assert r.graph_launches_per_request > 0
        assert r.details["graphs_recorded_in_replay"] == 0  # all recorded in setup
    assert few.graphs >= 2 and many.graphs >= 6
    assert many.graphs > few.graphs
    assert many.graph_pool_bytes >= few.graph_pool_bytes > 0


def test_profile_measures_pools_alone_and_shared(ctx_for):
    from runner.serve.profile import profile

    ctx = ctx_for([4, 16])
    pts = {p.batch_size: p for p in profile(ctx, [4, 16, 64])}
    for p in pts.values():
        assert p.pool_bytes > 0 and p.bucket_ms > 0 and p.eager_ms > 0
    # Captured largest first into one pool, the smaller graphs reuse the largest's memory:
    # together they add less than they take alone.
    assert pts[4].pool_extra_bytes <= pts[4].pool_bytes
    assert (sum(p.pool_extra_bytes for p in pts.values())
            < sum(p.pool_bytes for p in pts.values()))
