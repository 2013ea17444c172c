"""The advisor's profile of a serve run: per candidate bucket size, eager time, the time
to serve one request through that size's bucket, the graph pool that size takes captured
alone, and what it adds when captured largest first into one shared pool (as the buckets
strategy captures). contract/advisor.py chooses bucket sets from these figures.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from contract.numbers import finite, percentile
from contract.serve_record import ServeProfilePoint
from runner.core import memory
from runner.serve.context import Context, capture, reset

PROFILE_CALLS = {True: 5, False: 25}  # quick, standard: synchronised calls per size


def _median_ms(ctx: Context, fn, calls: int) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(calls):
        ctx.sync()
        t = time.perf_counter()
        fn()
        ctx.sync()
        times.append((time.perf_counter() - t) * 1e3)
    return percentile(times, 50)


def profile(ctx: Context, sizes: list[int]) -> list[ServeProfilePoint]:
    """Per candidate size: eager time, bucketed time and pool (alone), and the extra pool
    bytes when captured largest first into one shared pool."""
    calls, model = PROFILE_CALLS[ctx.quick], ctx.model
    gen = torch.Generator().manual_seed(1)
    points = []
    with torch.no_grad():
        for b in sizes:
            x = ctx.make_input(b, gen)
            p = {"batch_size": b, "eager_ms": _median_ms(ctx, lambda x=x: model(x), calls),
                 "execution": "cuda-graph" if ctx.cuda else "eager-padded",
                 "pool_bytes": None, "pool_extra_bytes": None, "capture_s": None}
            if ctx.cuda:
                old = set(memory.state(ctx.device).pools)
                t0 = time.perf_counter()
                sx = x.clone()
                g, _sy = capture(model, sx)
                p["capture_s"] = time.perf_counter() - t0
                p["pool_bytes"] = memory.state(ctx.device).private_bytes(old)

                def replay(g=g, sx=sx, x=x):
                    sx.copy_(x)
                    g.replay()
                p["bucket_ms"] = _median_ms(ctx, replay, calls)
                del g, sx, _sy, replay
                reset(ctx.device)
            else:
                sx = x.clone()
                p["bucket_ms"] = _median_ms(ctx, lambda sx=sx, x=x: model(sx.copy_(x)), calls)
            points.append(ServeProfilePoint(**finite(p)))
        if ctx.cuda:
            pool, keep = torch.cuda.graph_pool_handle(), []
            old = set(memory.state(ctx.device).pools)
            prev = 0
            for i in reversed(range(len(points))):
                sx = ctx.make_input(points[i].batch_size, gen)
                keep.append((sx, *capture(model, sx, pool)))
                now = memory.state(ctx.device).private_bytes(old)
                points[i], prev = replace(points[i], pool_extra_bytes=now - prev), now
            del keep
            reset(ctx.device)
    return points
