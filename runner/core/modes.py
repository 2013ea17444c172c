"""The four modes: turn (model, static input) into a timed-ready step callable.

Setup (compile, warm-up, capture) happens here and is timed per call, apart from the
steady state. Each builder returns a Prepared whose `step()` runs one step on the
point's fixed input, and whose `run(x)` runs the mode on another input of the same shape
(for the correctness check) and returns an output that stays valid.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contract.limits import TF32_TOLERANCE, TOLERANCE
from contract.measurement import SeparateGraphs
from contract.vocab import CUDA_GRAPH_MODES, MODE_TABLE, Mode


class Unsupported(Exception):
    """This mode cannot run on this device; str() says why."""


@dataclass
class Prepared:
    step: Callable[[], Any]
    run: Callable[[Any], Any]
    setup_s: float
    setup_calls_s: list[float] = field(default_factory=list)
    graph: Any = None  # torch.cuda.CUDAGraph of the manual mode, kept alive while timing
    keep: list = field(default_factory=list)  # static tensors the graph reads and writes
    details: dict = field(default_factory=dict)  # extra figures for the point's details
    # A training step's forward and backward captured in pools of their own, measured once
    # the mode's own memory figures are taken (they would count in them otherwise). Run on
    # CUDA only.
    separate_graphs: Callable[[], SeparateGraphs] | None = None


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _timed_call(fn: Callable[[], Any], device: str) -> tuple[Any, float]:
    _sync(device)
    t0 = time.perf_counter()
    out = fn()
    _sync(device)
    return out, time.perf_counter() - t0


def clone_output(out: Any) -> Any:
    """Copy tensors out of a possibly reused buffer (graph outputs are overwritten)."""
    import torch

    if isinstance(out, torch.Tensor):
        return out.detach().clone()
    if isinstance(out, (list, tuple)):
        return type(out)(clone_output(o) for o in out)
    if isinstance(out, dict):
        return {k: clone_output(v) for k, v in out.items()}
    return out


def builder(mode: str) -> Callable[[Any, Any, str], Prepared]:
    """How a mode is prepared, read from its entry of the mode table (contract/vocab.py):
    a compiled mode through torch.compile with the entry's compile mode, a graph mode
    that is not compiled captured by hand, any other as eager. So a mode that is one of
    these kinds is one entry there, and no builder here."""
    entry = MODE_TABLE.get(mode)
    if entry is None:
        raise ValueError(f"unknown mode {mode!r}")
    if entry.compiled:
        return functools.partial(_compiled, entry)
    return _cuda_graph if entry.graph else _eager


def prepare(mode: str, model, x, device: str) -> Prepared:
    build = builder(mode)
    if mode in CUDA_GRAPH_MODES and not device.startswith("cuda"):
        raise Unsupported(f"{mode} needs CUDA graphs, which exist on CUDA devices only; "
                          f"this point runs on {device}")
    # A workload whose step is not one forward call (train-step: runner/core/training.py)
    # brings its own builders for the four modes.
    own = getattr(model, "prepare_mode", None)
    if own is not None:
        return own(mode, x, device)
    return build(model, x, device)


def reference(model, x) -> Any:
    """What every mode's `run(x)` is compared with: eager's output, or what the model
    says its reference is (train-step: eager's parameters after N steps)."""
    own = getattr(model, "reference", None)
    return own(x) if own is not None else clone_output(model(x))


def _eager(model, x, device: str) -> Prepared:
    # Eager has no setup; the first call (lazy library init for this shape) is its cost.
    _, t = _timed_call(lambda: model(x), device)
    return Prepared(step=lambda: model(x), run=lambda x2: clone_output(model(x2)),
                    setup_s=t, setup_calls_s=[t])


def setup_calls(entry: Mode) -> int:
    """The calls a compiled mode's setup takes per shape: CUDA graph trees need three
    (1 compiles and warms up, 2 records, 3 is the first replay), a compile two."""
    return 3 if entry.graph else 2


def _compiled(entry: Mode, model, x, device: str) -> Prepared:
    import torch

    # dynamic=False: each batch size is its own static specialization, as a capture is.
    fn = torch.compile(model, mode=entry.compile_mode, dynamic=False)
    # Each call timed apart: that is what a user pays per new shape.
    calls = [_timed_call(lambda: fn(x), device)[1] for _ in range(setup_calls(entry))]
    return Prepared(step=lambda: fn(x), run=lambda x2: clone_output(fn(x2)),
                    setup_s=sum(calls), setup_calls_s=calls)


_GRAPH_STREAMS: dict[int, tuple[Any, Any]] = {}  # device index -> (warm-up, capture)


def graph_streams() -> tuple[Any, Any]:
    """The warm-up and capture streams of a manual graph on the current device: made once
    a process, and never one stream. cuBLAS keeps a workspace per stream, and a capture
    allocates one inside the graph's pool only where its stream has none yet.
    torch.cuda.Stream() deals out a pool of streams in turn and torch.cuda.graph captures
    on one stream made once, so a warm-up stream made per point was, one point in the
    pool's size, the capture stream itself: that graph's pool lacked the workspace and its
    memory cost read 4 MiB against 38 MiB (mlp batch 1 on the H100, two sweeps of one
    process; tests/runner/core/test_gpu_runner.py)."""
    import torch

    device = torch.cuda.current_device()
    if device not in _GRAPH_STREAMS:
        warm, capture = torch.cuda.Stream(), torch.cuda.Stream()
        while capture.cuda_stream == warm.cuda_stream:  # the pool came round
            capture = torch.cuda.Stream()
        _GRAPH_STREAMS[device] = (warm, capture)
    return _GRAPH_STREAMS[device]


def warm_up_on_side_stream(model, static_x, calls: int = 3, side=None) -> None:
    """Warm up on a side stream, as torch.cuda.graphs documents: lazy init (cuBLAS
    handles, workspaces) must happen before capture, and not on the capture stream.
    `side`: the stream (default: a new one from torch's pool)."""
    import torch

    side = side if side is not None else torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(calls):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)


def _cuda_graph(model, x, device: str) -> Prepared:
    import torch

    static_x = x.clone()
    _sync(device)
    t0 = time.perf_counter()
    warm, capture = graph_streams()
    warm_up_on_side_stream(model, static_x, side=warm)
    _sync(device)
    t1 = time.perf_counter()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture):
        static_out = model(static_x)
    _sync(device)
    t2 = time.perf_counter()

    def step():
        # The input copy is part of the step: a real caller pays it, as reduce-overhead's
        # graph trees pay theirs.
        static_x.copy_(x)
        graph.replay()
        return static_out

    def run(x2):
        static_x.copy_(x2)
        graph.replay()
        return clone_output(static_out)

    return Prepared(step=step, run=run, setup_s=t2 - t0, setup_calls_s=[t1 - t0, t2 - t1],
                    graph=graph, keep=[static_x, static_out])


def _flat(out) -> list:
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat(o)]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _flat(v)]
    return [out] if hasattr(out, "dtype") else []


def compare(out, reference, tf32: bool = False) -> tuple[float, float, float]:
    """(max_abs_err, tolerance, relative error) of an output against the eager one.
    `tf32`: float32 outputs were computed on TF32 tensor cores (limits.TF32_TOLERANCE)."""
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
        dtype = str(r.dtype).replace("torch.", "")
        tol = max(tol, TF32_TOLERANCE if tf32 and dtype == "float32"
                  else TOLERANCE.get(dtype, 0.0))
    rel = err / scale if scale > 0 else err
    return err, tol, rel
