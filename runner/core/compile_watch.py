"""What compiling did during a mode's setup, and the guard that keeps it from happening
again: Dynamo's counters and Inductor's cudagraph skip messages around a block
(compile_watch), recompiles made errors after setup (no_recompiles), and the verdict on
whether a mode's CUDA graphs actually replay (cudagraph_status). Used by
runner/core/point.py.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

from contract.measurement import CompileCounters
from contract.vocab import MODE_TABLE


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
def compile_watch(active: bool = True):
    """Yield CompileCounters, filled on exit with the counter deltas and the first skip
    messages.

    Inactive for modes that compile nothing: importing Inductor to watch an eager point
    cost 8 s of harness time on the H200 host's first point."""
    if not active:
        yield CompileCounters()
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
    watch = CompileCounters()
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
        watch.unique_graphs = delta("stats", "unique_graphs")
        watch.graph_breaks = delta("graph_break")
        watch.cudagraph_skips = delta("inductor", "cudagraph_skips")
        watch.fxgraph_cache_hit = delta("inductor", "fxgraph_cache_hit")
        watch.fxgraph_cache_miss = delta("inductor", "fxgraph_cache_miss")
        watch.skip_messages = handler.messages[:5]
        watch.torch_version = torch.__version__


@contextmanager
def no_recompiles(active: bool):
    """After setup a recompile would change what is measured: make it fail the point.
    During the rounds two compiled wrappers of one model alternate; each finds its own
    cache entry (Dynamo guards on the backend), so a recompile there is a real fault."""
    if not active:
        yield
        return
    import torch._dynamo.config as cfg

    old = cfg.error_on_recompile
    cfg.error_on_recompile = True
    try:
        yield
    finally:
        cfg.error_on_recompile = old


def cudagraph_status(mode: str, graph_launches: float | None,
                     watch: CompileCounters) -> tuple[str, str]:
    """(status, reason). The profiler's cudaGraphLaunch count is the truth; the skip
    counter and log miss some cases (recompile limit, graph breaks)."""
    # What the mode is, from its entry of the mode table (contract/vocab.py).
    entry = MODE_TABLE[mode]
    if not entry.compiled and not entry.graph:
        return "n/a", ""
    compiled = watch.unique_graphs
    if entry.compiled and compiled == 0:
        return "eager-fallback", "Dynamo compiled no graph: the model ran eagerly"
    if not entry.graph:
        return "n/a", ""
    if not entry.compiled:  # captured by hand: the replay is the graph
        return "replay", ""
    msgs = watch.skip_messages
    reason = msgs[0] if msgs else ""
    if graph_launches is None:  # no profiler (should not happen on CUDA): trust counters
        return ("skipped", reason) if watch.cudagraph_skips else ("replay", "")
    if graph_launches == 0:
        return "skipped", reason or ("the profiler saw no cudaGraphLaunch in a step, and "
                                     "no skip reason was logged")
    if watch.cudagraph_skips or watch.graph_breaks:
        why = reason or f"{watch.graph_breaks} graph break(s): eager code between graphs"
        return "partial", why
    return "replay", ""
