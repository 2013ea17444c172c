"""What every serve strategy shares: the model, one input per distinct size, eager
outputs; and the two steps both the replay (scenario.py) and the advisor's profile
(profile.py) take: reset between strategies and capture one graph."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from contract import buckets
from runner.core.modes import warm_up_on_side_stream
from runner.core.point import clear_cublas_workspaces, reset_state
from runner.core.workloads import Workload, model_dtype


@dataclass
class Context:
    """What every strategy shares: the model, one input per distinct size, eager outputs."""

    device: str
    model: Any
    make_input: Callable
    stream: list[int]
    quick: bool
    inputs: dict[int, Any] = field(default_factory=dict)
    refs: dict[int, Any] = field(default_factory=dict)
    dtype: str | None = "float32"  # None: a user factory's model without a float parameter

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


def make_context(workload: Workload, device: str, stream: list[int], seed: int,
                 quick: bool) -> Context:
    model, make_input = workload.build(device)
    if hasattr(model, "prepare_batch"):
        raise buckets.ServeInputError(
            f"workload {workload.name!r} keeps per-batch state (prepare_batch: a KV cache "
            "sized per batch); serve replays stateless models whose rows are independent")
    if getattr(model, "needs_grad", False):
        raise buckets.ServeInputError(
            f"workload {workload.name!r} is a training step; serve replays inference "
            "requests")
    ctx = Context(device, model, make_input, stream, quick,
                  dtype=model_dtype(model) or workload.dtype)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for b in sorted(set(stream)):
            x = make_input(b, gen)
            y = model(x)
            if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)
                    and x.shape[:1] == (b,) and y.shape[:1] == (b,)):
                raise buckets.ServeInputError(
                    f"workload {workload.name!r}: serve needs one tensor in and one out, "
                    "batch first")
            ctx.inputs[b], ctx.refs[b] = x, y.detach().clone()
    ctx.sync()
    return ctx


def reset(device: str) -> None:
    """Drop compiled code, graph trees, cuBLAS workspaces and cached blocks between
    strategies (the sweep's own isolation, runner/core/point.py)."""
    reset_state(device)


def _clear_cublas() -> None:
    # cuBLAS keeps one workspace per stream. Cleared around each capture (as CUDA graph
    # trees do) so a capture allocates its own inside its pool, and a later one can reuse
    # that memory: pool bytes are then the same whichever strategy captured first.
    clear_cublas_workspaces()


def capture(model, static_x, pool=None):
    """Warm up on a side stream (lazy init must not happen during capture), then capture."""
    warm_up_on_side_stream(model, static_x)
    _clear_cublas()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, pool=pool):
        static_y = model(static_x)
    _clear_cublas()
    torch.cuda.synchronize()
    return g, static_y
