"""One (mode, batch) point, measured from a clean state and left clean behind.

Isolation is a full in-process reset rather than a fresh process per point: a process
start (torch import, CUDA context) costs seconds per point on a slow host CPU, which
would dwarf an eager point and break the harness-overhead target. The reset covers what
MEASUREMENT.md names: Dynamo caches and recompile counts (torch._dynamo.reset), CUDA
graph trees and their pools, dropped references, gc, empty_cache. tests/test_gpu_runner
proves it: the 12th size of a sweep agrees with a fresh compile at that size.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
import traceback
from contextlib import contextmanager
from typing import Any

from runner import memory, modes, profiling
from runner.bundle import empty_measurement
from runner.timing import Measurement, TimingConfig, time_step
from runner.workloads import Workload

COMPILED_MODES = ("compile", "reduce-overhead")
# Relative tolerance of max_abs_err against max |reference|, per output dtype.
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "float16": 1e-2, "bfloat16": 3e-2}


def measure(workload: Workload, mode: str, batch_size: int, device: str,
            config: TimingConfig) -> dict[str, Any]:
    """Measure one point; never raises for a failing point (status "error" instead)."""
    m = empty_measurement(mode, batch_size)
    phases: dict[str, float] = {}
    m["details"]["phase_s"] = phases
    try:
        _measure(m, phases, workload, mode, batch_size, device, config)
    except modes.Unsupported as e:
        m.update(status="unsupported", message=str(e))
    except Exception as e:  # OOM, compile or capture error: this point only
        m.update(status="error", message=_one_line(e))
        m["details"]["traceback"] = traceback.format_exc(limit=-6)[-4000:]
    finally:
        t0 = time.perf_counter()
        reset_state(device)
        phases["cleanup"] = time.perf_counter() - t0
    return m


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:500]


def reset_state(device: str) -> None:
    """Back to as-if-fresh: no compiled code, no graph trees, no pools, no cached blocks."""
    import torch

    # Only what was loaded can hold state; importing Dynamo just to reset it would
    # charge seconds of import to an eager-only sweep.
    if "torch._dynamo" in sys.modules:
        try:
            torch._dynamo.reset()
        except Exception:  # a reset that fails leaves state behind; the next M0 shows it
            logging.getLogger(__name__).warning("torch._dynamo.reset failed", exc_info=True)
    if device.startswith("cuda") and "torch._inductor.cudagraph_trees" in sys.modules:
        try:  # torch < 2.5's dynamo reset does not clear the graph trees itself
            from torch._inductor.cudagraph_trees import reset_cudagraph_trees

            reset_cudagraph_trees()
        except Exception:
            pass
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        clear_cublas_workspaces()
        torch.cuda.empty_cache()


def clear_cublas_workspaces() -> None:
    """cuBLAS keeps one workspace (~32 MiB on Hopper) per handle and stream, allocated
    from whatever pool was current: one made during a capture pins that graph's pool
    after the graph is gone, and one left from an earlier point changes what the next
    point's setup allocates. Seen on the H200: a leftover 34 MiB private pool at the
    next point's M0, and graph pools of 34 or 94 MiB for the same shape by history."""
    import torch

    fn = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if fn is not None:
        fn()


def _measure(m, phases, workload, mode, batch_size, device, config) -> None:
    import torch

    if mode in modes.GRAPH_MODES and not device.startswith("cuda"):
        raise modes.Unsupported(f"{mode} needs CUDA graphs, which exist on CUDA devices "
                                f"only; this point runs on {device}")
    cuda = device.startswith("cuda")
    d = m["details"]
    d.update(num_threads=torch.get_num_threads(),
             tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32))
    t0 = time.perf_counter()
    torch.manual_seed(0)  # same weights at every point: points are comparable
    model, make_input = workload.build(device)
    if hasattr(model, "prepare_batch"):
        model.prepare_batch(batch_size)
    gen = torch.Generator().manual_seed(batch_size)
    x, x_check = make_input(batch_size, gen), make_input(batch_size, gen)
    phases["build"] = time.perf_counter() - t0

    # All under no_grad: grad mode is a guard, so warm-up and timing must share it.
    with torch.no_grad():
        t0 = time.perf_counter()
        reference = modes.clone_output(model(_fresh(x_check)))
        phases["reference"] = time.perf_counter() - t0
        if cuda:
            t0 = time.perf_counter()
            d["clocks_before"] = _clocks(device)
            # The reference run just made a workspace: drop it so that every mode's
            # setup starts from the same state and allocates its own where it runs.
            clear_cublas_workspaces()
            m0 = memory.state(device)
            memory.reset_peak(device)
            phases["snapshots"] = time.perf_counter() - t0
        with _compile_watch(mode in COMPILED_MODES) as watch:
            t0 = time.perf_counter()
            prepared = modes.prepare(mode, model, x, device)
            phases["setup"] = time.perf_counter() - t0
            m["setup_s"] = prepared.setup_s
            d["setup_calls_s"] = prepared.setup_calls_s
            if cuda:
                t0 = time.perf_counter()
                m1 = memory.state(device)
                phases["snapshots"] += time.perf_counter() - t0
            with _no_recompiles(mode):
                t0 = time.perf_counter()
                out = prepared.run(_fresh(x_check))
                err, tol, rel = compare(out, reference)
                m.update(max_abs_err=err, correct=rel <= tol)
                d.update(rel_err=rel, tolerance=tol)
                del out
                phases["correctness"] = time.perf_counter() - t0
                if cuda:
                    memory.reset_peak(device)
                tm = time_step(prepared.step, device, config, measurement=Measurement())
                phases.update(tm.phase_s)
                _store_timing(m, tm)
                if cuda:
                    t0 = time.perf_counter()
                    peak = memory.peak_allocated(device)
                    m2 = memory.state(device)
                    mem = memory.figures(m0, m1, m2, peak)
                    d.update(mem.pop("details"))
                    m.update(mem)
                    phases["memory"] = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    try:
                        launches = profiling.profile_step(prepared.step, config.profile_steps)
                    finally:
                        phases["profile"] = time.perf_counter() - t0
                    d.update(launches.pop("details"))
                    m.update(launches)
                    t0 = time.perf_counter()
                    d["clocks_after"] = _clocks(device)
                    phases["snapshots"] += time.perf_counter() - t0
        if mode in COMPILED_MODES:
            d["compile"] = watch
    status, reason = cudagraph_status(mode, m["graph_launches_per_step"], watch)
    m["cudagraph_status"] = status
    if reason:
        d["cudagraph_reason"] = reason
        if status in ("skipped", "partial", "eager-fallback"):
            m["message"] = reason[:500]


def _fresh(x):
    # Inputs are cloned for each use: a model that mutates its input must not change
    # the reference's input or the next call's.
    return x.clone() if hasattr(x, "clone") else x


def _store_timing(m: dict, tm: Measurement) -> None:
    s, lat, host = tm.stats, tm.latency, tm.host
    m.update(step_ms=s.median, step_ms_p10=s.p10, step_ms_p90=s.p90, samples=s.n,
             latency_ms=lat.median if lat else None, samples_ms=list(tm.samples_ms))
    m["details"].update(iters_per_block=tm.iters_per_block, warmup_steps=tm.warmup_steps,
                        host_ms_per_step=host.median if host else None,
                        latency_ms_p10=lat.p10 if lat else None,
                        latency_ms_p90=lat.p90 if lat else None)


def _clocks(device: str) -> dict:
    from runner.environment import read_clocks

    return read_clocks(device)


def _flat(out) -> list:
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat(o)]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _flat(v)]
    return [out] if hasattr(out, "dtype") else []


def compare(out, reference) -> tuple[float, float, float]:
    """(max_abs_err, tolerance, relative error) of an output against the eager one."""
    got, ref = _flat(out), _flat(reference)
    if len(got) != len(ref) or not ref:
        raise RuntimeError(f"output has {len(got)} tensors, eager's has {len(ref)}")
    err = scale = 0.0
    tol = 0.0
    for g, r in zip(got, ref, strict=True):
        if g.shape != r.shape:
            raise RuntimeError(f"output shape {tuple(g.shape)} != eager's {tuple(r.shape)}")
        g32, r32 = g.detach().double(), r.detach().double()
        err = max(err, float((g32 - r32).abs().max()) if r.numel() else 0.0)
        scale = max(scale, float(r32.abs().max()) if r.numel() else 0.0)
        tol = max(tol, TOLERANCE.get(str(r.dtype).replace("torch.", ""), 0.0))
    rel = err / scale if scale > 0 else err
    return err, tol, rel


# --- compile bookkeeping: counters, skip messages -----------------------------------

class _SkipHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        try:
            msg = record.getMessage()
        except Exception:
            return
        if "skipping cudagraphs" in msg.lower() or "cudagraph" in msg.lower() and "skip" in msg:
            self.messages.append(msg.strip())


def _counters() -> dict:
    from torch._dynamo.utils import counters

    return {k: dict(v) for k, v in counters.items()}


@contextmanager
def _compile_watch(active: bool = True):
    """Yield a dict filled on exit with counter deltas and the first skip message.

    Inactive for modes that compile nothing: importing Inductor to watch an eager point
    cost 8 s of harness time on the H200 host's first point."""
    if not active:
        yield {}
        return
    import torch

    for mod in ("torch._inductor.cudagraph_utils", "torch._inductor.compile_fx",
                "torch._inductor.cudagraph_trees"):
        try:
            __import__(mod)
        except Exception:  # older or newer layouts: watch whatever exists
            pass
    handler = _SkipHandler()
    # The skip message goes to an artifact logger (perf_hints before 2.5, cudagraphs
    # after) that does not propagate while the artifact is off: attach to each.
    names = [n for n in logging.root.manager.loggerDict
             if n.startswith("torch._inductor") and ("cudagraph" in n or "perf_hints" in n
                                                     or "compile_fx" in n)]
    loggers = [logging.getLogger(n) for n in names]
    for lg in loggers:
        lg.addHandler(handler)
    before = _counters()
    watch: dict[str, Any] = {}
    try:
        yield watch
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
        after = _counters()

        def delta(group, key=None):
            a, b = after.get(group, {}), before.get(group, {})
            if key is None:
                return sum(a.values()) - sum(b.values())
            return a.get(key, 0) - b.get(key, 0)

        # FX graph cache hits say the compile was warm (on-disk caches survive the
        # in-process reset): a cold compile autotunes, and on CUDA its benchmarking
        # buffer (the L2 size) lands in a reduce-overhead graph's pool.
        watch.update(unique_graphs=delta("stats", "unique_graphs"),
                     graph_breaks=delta("graph_break"),
                     cudagraph_skips=delta("inductor", "cudagraph_skips"),
                     fxgraph_cache_hit=delta("inductor", "fxgraph_cache_hit"),
                     fxgraph_cache_miss=delta("inductor", "fxgraph_cache_miss"),
                     skip_messages=handler.messages[:5],
                     torch_version=torch.__version__)


@contextmanager
def _no_recompiles(mode: str):
    """After setup a recompile would change what is measured: make it fail the point."""
    if mode not in ("compile", "reduce-overhead"):
        yield
        return
    import torch._dynamo.config as cfg

    old = cfg.error_on_recompile
    cfg.error_on_recompile = True
    try:
        yield
    finally:
        cfg.error_on_recompile = old


def cudagraph_status(mode: str, graph_launches: float | None, watch: dict) -> tuple[str, str]:
    """(status, reason). The profiler's cudaGraphLaunch count is the truth; the skip
    counter and log miss some cases (recompile limit, graph breaks)."""
    if mode == "eager":
        return "n/a", ""
    compiled = watch.get("unique_graphs", 0)
    if mode in ("compile", "reduce-overhead") and compiled == 0:
        return "eager-fallback", "Dynamo compiled no graph: the model ran eagerly"
    if mode == "compile":
        return "n/a", ""
    if mode == "cuda-graph":
        return "replay", ""
    msgs = watch.get("skip_messages") or []
    reason = msgs[0] if msgs else ""
    if graph_launches is None:  # no profiler (should not happen on CUDA): trust counters
        return ("skipped", reason) if watch.get("cudagraph_skips") else ("replay", "")
    if graph_launches == 0:
        return "skipped", reason or ("the profiler saw no cudaGraphLaunch in a step, and "
                                     "no skip reason was logged")
    if watch.get("cudagraph_skips") or watch.get("graph_breaks"):
        why = reason or f"{watch.get('graph_breaks')} graph break(s): eager code between graphs"
        return "partial", why
    return "replay", ""
