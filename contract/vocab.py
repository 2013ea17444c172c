"""Vocabularies as tables, not if-chains: the database CHECK constraints, the bundle
checks, the runner and the dashboard read these same names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    """What a mode is, in the facts the runner and the dashboard branch on."""

    name: str
    compiled: bool  # goes through torch.compile (Dynamo + Inductor)
    graph: bool  # replays a CUDA graph, so it needs a CUDA device
    color: str  # its colour on every chart
    shape: str  # its mark on Compare, where the colour is the run's (a Vega shape)
    dash: tuple[int, ...]  # its line's dash on Compare (Vega strokeDash)
    # torch.compile's mode= for a compiled mode (None: the default); the runner's
    # builders, training, the serve replay and the compile watch read it.
    compile_mode: str | None = None


# A mode is one entry here (docs/ARCHITECTURE.md, "Where a new thing goes"): the runner's
# builders and training step (runner/core/modes.py, training.py), the serve replay, the
# compile watch, the charts' colours, shapes and dashes and the database's CHECK
# (db/vocab_checks.py) all read this table.
MODE_TABLE: dict[str, Mode] = {m.name: m for m in (
    Mode("eager", compiled=False, graph=False, color="#7f7f7f", shape="cross",
         dash=(1, 3)),
    Mode("compile", compiled=True, graph=False, color="#1f77b4", shape="square",
         dash=(2, 2)),
    Mode("reduce-overhead", compiled=True, graph=True, color="#d62728",
         shape="triangle-up", dash=(6, 3), compile_mode="reduce-overhead"),
    Mode("cuda-graph", compiled=False, graph=True, color="#2ca02c", shape="circle",
         dash=(1, 0)),
)}
MODES = tuple(MODE_TABLE)
# The baseline every speedup is over, and the modes compared against it.
BASELINE_MODE = "eager"
ALTERNATIVE_MODES = tuple(m for m in MODES if m != BASELINE_MODE)
# Modes that capture a CUDA graph: on a CPU device they are "unsupported".
CUDA_GRAPH_MODES = tuple(m.name for m in MODE_TABLE.values() if m.graph)
COMPILED_MODES = tuple(m.name for m in MODE_TABLE.values() if m.compiled)

RUN_STATUSES = ("queued", "running", "done", "failed", "cancelled")
FINISHED_STATUSES = ("done", "failed", "cancelled")
POINT_STATUSES = ("ok", "error", "unsupported", "skipped")
CUDAGRAPH_STATUSES = ("replay", "partial", "skipped", "eager-fallback", "n/a")
SOURCES = ("measured", "published")
@dataclass(frozen=True)
class RunKind:
    """What a kind of run is, in the facts the database, the bundle and the pages branch
    on: one entry of RUN_KIND_TABLE (docs/ARCHITECTURE.md, "Where a new thing goes")."""

    name: str
    noun: str  # how a picker names one: "serve run"
    section: str | None  # the bundle's (and database's) section of its own, if any
    curves: bool  # it has points with speedups: Compare overlays it, the board ranks it
    page: str = "run"  # the page (pages table's name) that shows it
    elsewhere: str = ""  # where Compare sends a run without curves


# graph-memory: one graph captured per size, the pool read after each (graph_memory.py).
# A published run is a sweep whose source is "published" (SOURCES), not a kind.
RUN_KIND_TABLE: dict[str, RunKind] = {k.name: k for k in (
    RunKind("sweep", "sweep", None, curves=True),
    RunKind("serve", "serve run", "serve", curves=False, page="serve",
            elsewhere="on the Serve page"),
    RunKind("graph-memory", "graph-memory run", "graph_memory", curves=False,
            elsewhere="on its own page"),
)}
RUN_KINDS = tuple(RUN_KIND_TABLE)
DEVICES = ("cuda", "cpu")
# Where a queued job may run: "auto" lets the worker choose (cuda if it has one).
JOB_DEVICES = ("auto", *DEVICES)
# Who runs a queued job. local: any `runner worker` may claim it; slurm: only the batch
# job submitted for it (`worker --job ID`), on a node of the GPU type asked for
# (runner/ops/slurm.py).
JOB_EXECUTORS = ("local", "slurm")
# Why a point's rounds ended: every interval under its target, or the time budget spent.
STOP_REASONS = ("converged", "budget")
# What a point's timing does about other workers on its host (runner/core/host_gate.py).
HOST_POLICIES = ("exclusive", "shared")
# What a batch size's measurement is doing, as progress reports it per (mode, batch)
# point: each mode's setup runs in turn (a cold Inductor compile can take minutes on a
# CPU), then the modes' interleaved rounds, then each mode's latency and profiled pass.
POINT_PHASES = {"setup": "setup (compile or capture, warm-up)",
                "ahead": "waiting for the later batch sizes' compiles (helpers, none timed)",
                "timing": "timing (the modes' rounds, interleaved)",
                "energy": "energy windows (the GPU's energy counter)",
                "profiling": "latency and profiled pass",
                "memory": "memory pass (each mode alone, from a clean state)"}
# What `runner export` writes: launchbench's bundle (the default), or the records of
# PyTorch's OSS benchmark database (contract/pytorch_benchmark.py).
EXPORT_FORMATS = ("bundle", "pytorch-benchmark")
# Timing presets by name; their figures are the measuring core's (runner/core/timing.py).
TIMINGS = ("quick", "standard", "thorough")
# Fresh processes per sweep when none is asked for, by preset. Measured on the lent H200
# (bench/repeatability.py, three `mlp` sweeps of 8 batch sizes x 4 modes): with one
# process another run's median fell inside a run's 95% interval in 24% of checks (host
# states last a process), with three in 82%, for 2.2x the sweep's wall time (150 s against
# 70 s before intervals). An interval that holds is worth the time; `quick` is a smoke
# test and keeps one.
DEFAULT_PROCESSES = {"quick": 1, "standard": 3, "thorough": 5}
DTYPES = ("float32", "float16", "bfloat16")
# Serve strategies: a mode for every request size, or captured buckets with padding.
STRATEGY_KINDS = ("eager", "compile", "reduce-overhead", "buckets")
