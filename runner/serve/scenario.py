"""Serving replay: one reproducible stream of requests under each strategy (issue 5).

Imports torch and the standard library only (plus launchbench's own runner modules).

Per strategy: setup (compile, record or capture; timed: what a server pays before its
first request), a warm pass over every distinct size, then the timed replay: each request
runs and is synchronised (a server hands its result back), so per-request latency is host
wall time around it and throughput is requests over the replay's wall time. Then the
sliced outputs are checked against eager on the real rows, and on CUDA a short profiled
pass counts host and graph launches per request. Between strategies every compiled
artefact and graph is dropped, so none inherits another's caches or pools.

First, a profile of candidate bucket sizes for the advisor (runner/serve/profile.py).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from contract import advisor, buckets
from contract.buckets import Strategy
from contract.bundle import now_iso
from contract.energy import EnergyWindowJson
from contract.json_shape import as_json
from contract.limits import TOLERANCE
from contract.measurement import Launches, split
from contract.numbers import finite
from contract.run_record import Environment, Run
from contract.serve_record import (
    ServeConfig,
    ServeDetails,
    ServeEnergy,
    ServeProfileCounts,
    ServeResult,
)
from contract.vocab import MODE_TABLE
from runner.core import energy, memory
from runner.core.energy_counter import ticks_of
from runner.core.workloads import Workload
from runner.serve.context import (  # noqa: F401 - the scenario's API includes its context
    Context,
    capture,
    make_context,
    reset,
)

# Calls before a strategy is timed: CUDA graph trees need three per shape (warm up,
# record, replay), any other one; a mode's from its entry of the mode table.
WARM_CALLS = {**{m.name: 3 if m.compiled and m.graph else 1 for m in MODE_TABLE.values()},
              "buckets": 1}
PROFILED_REQUESTS = {True: 5, False: 20}


@dataclass
class Executor:
    serve: Callable[[Any], Any]  # one request's input -> its real rows
    execution: str
    graphs: int | None
    details: ServeDetails = field(default_factory=ServeDetails)  # the result's, to start
    count_graphs: Callable[[], int | None] | None = None  # reduce-overhead: recordings
    keep: list = field(default_factory=list)  # graphs and static tensors, alive while used


# --- the strategies ----------------------------------------------------------------------

def _eager(ctx: Context, s: Strategy) -> Executor:
    return Executor(ctx.model, "eager", 0)


def _compile(ctx: Context, s: Strategy) -> Executor:
    # dynamic=None (the default): the second size recompiles with a dynamic batch
    # dimension, which is what serving a new size every request needs.
    return Executor(torch.compile(ctx.model), "inductor", 0)


def _tree_nodes() -> int | None:
    """CUDA graphs recorded by CUDA graph trees on this device (None when unreadable)."""
    try:
        from torch._inductor.cudagraph_trees import get_manager

        mgr = get_manager(torch.cuda.current_device(), create_if_none_exists=False)
        if mgr is None:
            return 0
        nodes, count = [n for roots in mgr.roots.values() for n in roots], 0
        while nodes:
            node = nodes.pop()
            count += 1
            nodes.extend(c for children in node.children.values() for c in children)
        return count
    except Exception:  # private API: a torch that moved it leaves the count unknown
        return None


def _reduce_overhead(ctx: Context, s: Strategy) -> Executor:
    fn = torch.compile(ctx.model, mode="reduce-overhead")

    def serve(x):
        # A new "step" per request: the previous request's outputs are done with, so the
        # trees may overwrite them (they are never held across requests here).
        torch.compiler.cudagraph_mark_step_begin()
        return fn(x)

    return Executor(serve, "cudagraph-trees", None, count_graphs=_tree_nodes)


def _buckets(ctx: Context, s: Strategy) -> Executor:
    sizes, model = s.buckets, ctx.model
    gen = torch.Generator().manual_seed(0)
    static: dict[int, tuple] = {}
    details: ServeDetails = {}
    if ctx.cuda:
        details.update({"capture_order": [], "pool_bytes_by_bucket": {},
                        "capture_s_by_bucket": {}})
        pool = torch.cuda.graph_pool_handle()
        before = memory.state(ctx.device)
        old, prev = set(before.pools), 0
        for b in reversed(sizes):  # largest first: the smaller graphs reuse its memory
            t0 = time.perf_counter()
            sx = ctx.make_input(b, gen)
            g, sy = capture(model, sx, pool)
            details["capture_s_by_bucket"][str(b)] = time.perf_counter() - t0
            now = memory.state(ctx.device).private_bytes(old)
            details["pool_bytes_by_bucket"][str(b)] = now - prev
            details["capture_order"].append(b)
            prev = now
            static[b] = (g, sx, sy)
    else:
        for b in sizes:
            static[b] = (None, ctx.make_input(b, gen), None)

    def serve(x):
        n = x.shape[0]
        b = buckets.choose_bucket(n, sizes)
        if b is None:
            return model(x)  # above the largest bucket: eager
        g, sx, sy = static[b]
        sx[:n].copy_(x)  # rows n..b keep whatever they held: padding is never read back
        if g is None:
            return model(sx)[:n]
        g.replay()
        return sy[:n]

    if not ctx.cuda:
        details["note"] = ("no CUDA: each bucket ran eagerly at its padded size (padding "
                           "cost measured, no graphs captured)")
    return Executor(serve, "cuda-graph" if ctx.cuda else "eager-padded",
                    len(sizes) if ctx.cuda else 0, details, keep=[static])


STRATEGIES: dict[str, Callable[[Context, Strategy], Executor]] = {
    "eager": _eager, "compile": _compile, "reduce-overhead": _reduce_overhead,
    "buckets": _buckets,
}


# --- measuring one strategy --------------------------------------------------------------

def _compiles() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def _skips() -> int:
    """CUDA graph trees' skip count ("skipping cudagraphs due to ..."): the profiler's
    graph launches are the truth, this says why there were none."""
    return int(torch._dynamo.utils.counters["inductor"]["cudagraph_skips"])


def _replay(ctx: Context, serve) -> tuple[list[float], float]:
    """Each request timed on the host around the call and its synchronise."""
    lat: list[float] = []
    gc_was = gc.isenabled()
    gc.disable()  # a collection inside the replay would land on one request's latency
    try:
        ctx.sync()
        start = time.perf_counter()
        for b in ctx.stream:
            x = ctx.inputs[b]
            t = time.perf_counter()
            serve(x)
            ctx.sync()
            lat.append((time.perf_counter() - t) * 1e3)
        wall = time.perf_counter() - start
    finally:
        if gc_was:
            gc.enable()
    return lat, wall


def _check(ctx: Context, serve) -> tuple[float, bool]:
    """Max abs error of the real rows against eager, over every distinct size (inf when
    the shape is wrong or an output is not finite)."""
    worst, ok = 0.0, True
    tol = TOLERANCE.get(ctx.dtype, 1e-4) if ctx.dtype is not None else 1e-4
    for b, x in ctx.inputs.items():
        y = serve(x).detach().clone().float()  # clone: a graph overwrites its output
        ref = ctx.refs[b].float()
        err = float((y - ref).abs().max()) if y.shape == ref.shape else math.inf
        err = err if math.isfinite(err) else math.inf  # NaN must not compare as small
        worst = max(worst, err)
        ok = ok and err <= tol * max(1.0, float(ref.abs().max()))
    return worst, ok


def _launches(ctx: Context, serve) -> Launches:
    from runner.core.profiling import profile_step

    n = PROFILED_REQUESTS[ctx.quick]
    order = iter(ctx.stream * (1 + (n + 3) // len(ctx.stream)))
    return profile_step(lambda: serve(ctx.inputs[next(order)]), n)[0]


def _profile(launches: Launches) -> ServeProfileCounts:
    """A serve result's details["profile"]: the counts beyond the two per-request ones,
    with the profiler's own details under "details" (the layout bundles hold)."""
    top, details = split(launches)
    for k in ("host_launches_per_step", "graph_launches_per_step"):
        top.pop(k)
    # split's top-level fields less the two per request: ServeProfileCounts' (contract)
    return cast(ServeProfileCounts, {**top, "details": details})


def _energy(ctx: Context, serve, counter) -> ServeEnergy:
    """Energy per request (issue 28), for details["energy"]: consecutive windows between
    ticks of the counter after a lead-in (runner/core/energy.py mode_windows) over the
    stream's requests in order, each synchronised as in the replay, after the replay so
    the reader costs no latency. Not interleaved
    across strategies (each runs alone, its graphs dropped before the next), so there is
    no paired gain: compare strategies by their figures and intervals. A reason where
    there is no counter or a window fails; never 0."""
    if isinstance(counter, str):
        return {"unavailable_reason": counter}
    order = itertools.cycle(ctx.stream)
    config = energy.ENERGY_PRESETS["quick" if ctx.quick else "standard"]
    try:
        # Each request syncs itself (as in the replay), so the requests launched while a
        # window is open are the requests done in it, to one request.
        ws = energy.mode_windows(lambda: serve(ctx.inputs[next(order)]), 1,
                                 ticks_of(counter), counter, config, mode="request",
                                 sync=ctx.sync)
    except Exception as e:  # noqa: BLE001 - the strategy's other figures stand
        return {"unavailable_reason": f"energy window: {type(e).__name__}: {e}"[:300]}
    got = energy.summarise(ws, None, getattr(counter, "name", None))
    if not got.available:
        return {"unavailable_reason": got.unavailable_reason}
    return {"energy_mj_per_request": got.energy_mj_per_step,
            "energy_mj_per_request_ci_low": got.energy_mj_per_step_ci_low,
            "energy_mj_per_request_ci_high": got.energy_mj_per_step_ci_high,
            "avg_power_w": got.avg_power_w, "counter": got.counter,
            # an EnergyWindow's fields: EnergyWindowJson's (contract/energy.py)
            "windows": [cast(EnergyWindowJson, dataclasses.asdict(w)) for w in ws]}


def _warm_up(ctx: Context, exe: Executor, s: Strategy) -> None:
    """Two passes over every size. The first compiles: Dynamo specialises the first size
    and recompiles with a dynamic batch on the second, and from then on the dynamic graph
    also takes sizes the static one served. The second pass then records (graph trees:
    warm-up, record, replay) each size where it will run, so nothing is compiled or
    recorded while timing (measure checks it)."""
    for calls in (1, WARM_CALLS[s.kind]):
        for b in sorted(set(ctx.stream)):
            for _ in range(calls):
                exe.serve(ctx.inputs[b])
    ctx.sync()


def measure(ctx: Context, s: Strategy, counter: Any = "energy not measured") -> ServeResult:
    """One strategy's result record (contract/serve_record.py ServeResult).
    `counter`: run_serve's energy counter, or the reason there is none."""
    stream = ctx.stream
    r = ServeResult.empty(s.name, requests=len(stream), real_rows=sum(stream))
    if s.kind in MODE_TABLE and MODE_TABLE[s.kind].graph and not ctx.cuda:
        return dataclasses.replace(
            r, status="unsupported", message=f"{s.kind} records CUDA graphs, which "
            f"exist on CUDA devices only; this run is on {ctx.device}")
    st = buckets.bucket_stats(stream, s.buckets) if s.kind == "buckets" else None
    r = dataclasses.replace(r, padding_waste=st.padding_waste if st else 0.0,
                            wasted_fraction=st.wasted_fraction if st else 0.0,
                            hit_rate=st.hit_rate if st else None,
                            fallback_rate=st.fallback_rate if st else None)
    with torch.no_grad():
        m0 = memory.state(ctx.device) if ctx.cuda else None
        c0, k0 = _compiles(), _skips()
        t0 = time.perf_counter()
        exe = STRATEGIES[s.kind](ctx, s)
        _warm_up(ctx, exe, s)
        setup_s = time.perf_counter() - t0
        m1 = memory.state(ctx.device) if ctx.cuda else None
        c1, g1 = _compiles(), exe.count_graphs() if exe.count_graphs else exe.graphs
        lat, wall = _replay(ctx, exe.serve)
        m2 = memory.state(ctx.device) if ctx.cuda else None
        c2, g2 = _compiles(), exe.count_graphs() if exe.count_graphs else exe.graphs
        err, ok = _check(ctx, exe.serve)
        used = _energy(ctx, exe.serve, counter)
        launches = _launches(ctx, exe.serve) if ctx.cuda else None
    summary = buckets.latency_summary(lat)
    r = dataclasses.replace(
        r, execution=exe.execution, graphs=g2, setup_s=setup_s, latencies_ms=lat,
        latency_ms_mean=summary["latency_ms_mean"], latency_ms_p50=summary["latency_ms_p50"],
        latency_ms_p99=summary["latency_ms_p99"], requests_per_s=len(stream) / wall,
        rows_per_s=sum(stream) / wall, correct=ok,
        max_abs_err=err if math.isfinite(err) else None)
    details: ServeDetails = {
        **exe.details, "replay_wall_s": wall, "compiles_in_setup": c1 - c0,
        "compiles_in_replay": c2 - c1, "cudagraph_skips": _skips() - k0, "energy": used}
    if g1 is not None and g2 is not None:
        details["graphs_recorded_in_replay"] = g2 - g1
    if m0 is not None:  # then ctx.cuda, and m1 and m2 were read too
        m1, m2 = cast(memory.MemState, m1), cast(memory.MemState, m2)
        old = set(m0.pools)
        pool_bytes = max(m1.private_bytes(old), m2.private_bytes(old))
        r = dataclasses.replace(r, graph_pool_bytes=pool_bytes)
        details.update({"memory": {k: as_json(state.snapshot()) for k, state in
                                   (("m0", m0), ("m1", m1), ("m2", m2))},
                        "device_used_delta_bytes": m1.device_used - m0.device_used})
        if g2:
            details["pool_bytes_per_graph"] = pool_bytes / g2
    if launches is not None:
        r = dataclasses.replace(r, host_launches_per_request=launches.host_launches_per_step,
                                graph_launches_per_request=launches.graph_launches_per_step)
        details["profile"] = _profile(launches)
    if not ok:
        r = dataclasses.replace(
            r, message=f"sliced outputs differ from eager (max abs error {err:.3g})")
    del exe
    return dataclasses.replace(r, details=finite(details))


# --- the run -----------------------------------------------------------------------------

def run_serve(ctx: Context, strategies: tuple[Strategy, ...], sink, *,
              environment: Environment, run: Run, config: ServeConfig,
              profile_sizes: list[int], progress: Callable[[str], None] | None = None,
              energy_counter: Any = None) -> str:
    """Profile the candidate sizes (quick, and what the advisor needs), then replay under
    each strategy; each part goes to the sink as soon as it is done. A strategy that fails
    is recorded as `error` and the run goes on. `energy_counter`: one to read instead of
    NVML's (tests); NVML's is opened once per run."""
    from runner.core.energy_counter import open_counter
    from runner.serve.profile import profile

    counter = energy_counter
    if counter is None:
        counter = open_counter(ctx.device) if ctx.cuda else \
            f"no CUDA device: this run is on {ctx.device}"
    say = progress or (lambda _msg: None)
    sink.start(environment, run, config)
    try:
        say(f"profiling {len(profile_sizes)} candidate bucket sizes")
        try:
            sink.profile(profile(ctx, profile_sizes))
        except Exception as e:  # noqa: BLE001 - the strategies still run; say why not this
            say(f"profile failed: {type(e).__name__}: {str(e)[:300]}")
        finally:
            reset(ctx.device)
        for i, s in enumerate(strategies, 1):
            say(f"[{i}/{len(strategies)}] {s.name}")
            try:
                r = measure(ctx, s, counter)
            except Exception as e:  # noqa: BLE001 - OOM, capture or compile error: recorded
                r = ServeResult.empty(s.name, status="error", message=f"{type(e).__name__}: "
                                      f"{(str(e).strip().splitlines() or [''])[0][:500]}")
            finally:
                reset(ctx.device)
            sink.result(r)
    except KeyboardInterrupt:
        sink.finish("cancelled")
        return "cancelled"
    except BaseException:
        sink.finish("failed")
        raise
    finally:
        close = getattr(counter, "close", None)
        if close is not None:
            close()
    sink.finish("done")
    return "done"


def new_run(workload: Workload, ctx: Context, label: str | None, command: str | None) -> Run:
    return Run(uuid=str(uuid.uuid4()), workload=workload.name,
               workload_params=dict(workload.params), dtype=ctx.dtype, created_at=now_iso(),
               label=label, command=command, kind="serve")


def profile_sizes(stream: list[int], strategies: tuple[Strategy, ...]) -> list[int]:
    return advisor.profile_sizes(stream, [s.buckets for s in strategies if s.buckets])
