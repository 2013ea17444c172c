"""`graph-memory`: capture one CUDA graph per size, largest first, and read the memory after
each capture (GPU only; the attribution is contract/graph_memory.py, torch-free).

Each series starts from a reset state (no pools, cuBLAS workspaces cleared, cache
emptied), captures in the serving engines' order (largest first, vLLM and SGLang both do),
clears cuBLAS workspaces around each capture as CUDA graph trees and runner/serve do, and
after each capture records: the bytes reserved by the pools this series made (from
torch.cuda.memory_snapshot(), segments by segment_pool_id), bytes allocated and the
driver's used bytes since the series began, and the capture's seconds (warm-up included:
what an engine's start-up pays). Shared: one pool from torch.cuda.graph_pool_handle(), as
vLLM (current_platform.get_global_graph_pool()) and SGLang do. Private: a pool per graph.

A model with per-batch state (`prepare_batch`: hf-causal-lm's StaticCache, the decoder's
KV buffers) gets that state for each size before its warm-up, as a sweep point does: the
state lives outside the pools (an engine's KV cache is its own allocation), so the pools
stay what is measured. Each graph replays right after its memory is read, while its
size's state is alive: the next size's prepare_batch replaces that state, after which an
older graph must not replay (it would write into freed memory).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from contract.graph_memory import Capture
from runner.core import memory
from runner.core.modes import warm_up_on_side_stream
from runner.core.point import reset_state


def capture_series(model, make_input: Callable, sizes: Sequence[int], pool_kind: str,
                   device: str = "cuda", progress: Callable[[str], None] | None = None
                   ) -> list[Capture]:
    import torch

    reset_state(device)
    before = memory.state(device)
    old = set(before.pools)
    pool = torch.cuda.graph_pool_handle() if pool_kind == "shared" else None
    gen = torch.Generator().manual_seed(0)
    keep, rows = [], []
    with torch.no_grad():
        for b in sorted(sizes, reverse=True):
            x = size_input(model, make_input, b, gen)
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            warm_up_on_side_stream(model, x)
            memory.clear_cublas_workspaces()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                y = model(x)
            memory.clear_cublas_workspaces()
            torch.cuda.synchronize(device)
            cap_s = time.perf_counter() - t0
            keep.append((g, x, y))  # every graph stays alive, as in an engine
            now = memory.state(device)
            rows.append(Capture(batch_size=b, capture_s=cap_s,
                                   pool_reserved_bytes=now.private_bytes(old),
                                   allocated_bytes=now.allocated - before.allocated,
                                   device_used_bytes=now.device_used - before.device_used))
            g.replay()  # each graph must replay: a broken capture is no figure
            torch.cuda.synchronize(device)
            if progress:
                progress(f"{pool_kind}: size {b} captured, pools "
                         f"{rows[-1].pool_reserved_bytes / 2**20:.1f} MiB")
    del keep
    reset_state(device)
    return rows


def not_capturable(model, name: str) -> str | None:
    """Why `model` has no per-size forward graph to measure, or None. A training step
    (train-step: forward, backward and the optimizer) is one graph a trainer captures once
    at its batch size, not a list of sizes an engine captures; its graph pool is measured
    by a sweep's cuda-graph mode. Found on the H100: capture_series called the task like a
    module ('TrainTask' object is not callable)."""
    if getattr(model, "needs_grad", False):
        return (f"workload {name!r} is a training step: graph-memory measures the forward "
                "graphs an inference engine captures per batch size; a training step's "
                "graph pool is in its sweep's cuda-graph points (python -m runner sweep "
                f"--workload {name} --modes eager,cuda-graph)")
    return None


def size_input(model, make_input: Callable, batch_size: int, generator):
    """The input of one size, after the model's per-batch state is made for that size
    (prepare_batch; the reason the hf-causal-lm capture once crashed: its forward rewinds
    a cache that only prepare_batch creates). Runs on any device: tests call it on CPU."""
    if hasattr(model, "prepare_batch"):
        model.prepare_batch(batch_size)
    return make_input(batch_size, generator)
