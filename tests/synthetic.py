"""SYNTHETIC bundles for tests and the dashboard speed benchmark only.

The figures follow a made-up launch-bound model (fixed host cost per launch plus a kernel
time that grows with batch size) so curves have a plausible shape. They are not
measurements, are labelled SYNTHETIC wherever they appear, and never go to data/samples/.

By default points carry interval fields as bundle version 3 does (rounds, 95% intervals,
paired speedup, host launch cost); `intervals=False` gives old-style points (version 2)
where all of those are unknown, as in the shipped older samples.
"""

from __future__ import annotations

import uuid as uuidlib

from contract import bundle as fmt
from contract import trace as tr

SYNTHETIC = "SYNTHETIC test data"
MIB = 1024 * 1024
ROUNDS = 8
# Relative half-widths of the made-up intervals: step time +-1%, speedup +-2%.
STEP_HALF, SPEEDUP_HALF = 0.01, 0.02

# mode -> (fixed ms per step, kernel time factor, host launches, graph launches, setup s)
_SHAPE = {
    "eager": (1.30, 1.00, 64, 0, None),
    "compile": (0.80, 0.90, 20, 0, 5.0),
    "reduce-overhead": (0.05, 0.90, 1, 1, 7.0),
    "cuda-graph": (0.03, 1.00, 0, 1, 0.5),
}


def environment(gpu: str | None = "Synthetic GPU", torch: str = "0.0+synthetic",
                device: str = "cuda") -> dict:
    env = {f: None for f in fmt.ENVIRONMENT_FIELDS}
    env.update(device=device, gpu_name=gpu if device == "cuda" else None,
               torch_version=torch, python_version="3.11", hostname="synthetic-host")
    return env


def _step(mode: str, batch: int, scale: float) -> tuple[float, float]:
    fixed, factor, *_ = _SHAPE[mode]
    kernel = (0.10 + 0.0002 * batch) * factor * scale
    return fixed * scale + kernel, kernel


def _wiggle(value: float, i: int, rel: float) -> float:
    """A deterministic per-round spread (no random numbers: tests stay reproducible)."""
    return value * (1 + rel * ((i % 3) - 1))


def trace(mode: str, batch: int, scale: float = 1.0, kernels: int = 64) -> dict:
    """A made-up step timeline with the shape of the made-up figures: eager and compile
    launch each kernel from the host (the GPU waits between), the graph modes replay them
    back to back after one cudaGraphLaunch. Kernels alternate between two streams' names
    only; all run on stream 7."""
    fixed, _, host, graph, _ = _SHAPE[mode]
    step_ms, kernel_ms = _step(mode, batch, scale)
    k_us = kernel_ms * 1e3 / kernels
    cpu, gpu = [], []
    if graph:
        cpu.append(("cudaGraphLaunch", 2.0, 8.0))
        t = 12.0
        for i in range(kernels):
            gpu.append((f"synthetic_{'gemm' if i % 2 == 0 else 'relu'}_kernel", t, k_us, 7))
            t += k_us + 0.5
    else:
        gap = max(fixed * 1e3 / max(host, 1), k_us + 1.0)
        for i in range(kernels):
            t = i * gap
            cpu.append(("cudaLaunchKernel", t, 4.0))
            gpu.append((f"synthetic_{'gemm' if i % 2 == 0 else 'relu'}_kernel", t + 5.0,
                        k_us, 7))
    end = max(step_ms * 1e3, cpu[-1][1] + cpu[-1][2])
    return tr.build(cpu, gpu, cpu_end=end,
                    gpu_span=[gpu[0][1], gpu[-1][1] + gpu[-1][2]], step=2, steps=3)


def step_figures(ms: float, half: float = STEP_HALF) -> dict:
    """A step time with the percentiles and 95% interval the made-up points give it
    (p10 3% below, p90 5% above, the interval +-`half`): an override that moves a step
    moves these with it, as a median outside them is refused on the way in."""
    return {"step_ms": ms, "step_ms_p10": ms * 0.97, "step_ms_p90": ms * 1.05,
            "step_ms_ci_low": ms * (1 - half), "step_ms_ci_high": ms * (1 + half)}


def point(mode: str, batch: int, *, scale: float = 1.0, device: str = "cuda",
          intervals: bool = True, launch_us: float = 10.0, traces: bool = False) -> dict:
    m = fmt.empty_measurement(mode, batch)
    if device == "cpu" and mode in ("reduce-overhead", "cuda-graph"):
        m.update(status="unsupported", message=f"{mode} needs CUDA; this run is on cpu")
        return m
    _, _, host, graph, setup = _SHAPE[mode]
    step, kernel = _step(mode, batch, scale)
    m.update(step_ms=step, step_ms_p10=step * 0.97, step_ms_p90=step * 1.05, samples=20,
             latency_ms=step * 1.1, setup_s=setup, samples_ms=[step] * 5,
             details={"note": SYNTHETIC})
    if intervals:
        m.update(samples=ROUNDS, samples_ms=[_wiggle(step, i, 0.01) for i in range(ROUNDS)],
                 step_ms_ci_low=step * (1 - STEP_HALF), step_ms_ci_high=step * (1 + STEP_HALF),
                 launch_us=launch_us,
                 launch_us_rounds=[_wiggle(launch_us, i, 0.02) for i in range(ROUNDS)],
                 stop_reason="converged", noisy=False, host_unstable=False)
        if mode != "eager":
            sp = _step("eager", batch, scale)[0] / step
            m.update(speedup=sp, speedup_ci_low=sp * (1 - SPEEDUP_HALF),
                     speedup_ci_high=sp * (1 + SPEEDUP_HALF))
    if device == "cuda":
        pool = (32 * MIB + batch * 4096) if graph else 0
        m.update(host_launches_per_step=host, graph_launches_per_step=graph,
                 gpu_kernels_per_step=64, gpu_busy_ms=kernel, graph_pool_bytes=pool,
                 peak_allocated_bytes=batch * 32 * 1024 + 8 * MIB, reserved_delta_bytes=pool,
                 cudagraph_status="replay" if graph else "n/a", correct=True,
                 max_abs_err=1e-6)
        if intervals:  # as the isolated memory pass measures (bundle version 7): eager
            # keeps a 32 MiB workspace; a graph mode its pool (workspace inside) and 2
            # MiB beside it; the cost is what a mode keeps beyond eager's 32 MiB
            kept = pool + 2 * MIB if graph else EAGER_KEPT
            m.update(reserved_delta_bytes=kept, memory_cost_bytes=kept - EAGER_KEPT)
            m["details"] = {**m["details"], "eager_reserved_delta_bytes": EAGER_KEPT,
                            "leftover_private_pools_at_m0": 0, "leftover_bytes_at_m0": 0}
        if traces:
            m["trace"] = trace(mode, batch, scale)
            m["gpu_busy_ms"] = tr.kernel_sum_us(m["trace"]) / 1e3
    return m


EAGER_KEPT = 32 * MIB  # eager's cuBLAS workspace, as the H100 measured (contract/memory.py)


def sweep_bundle(*, gpu: str | None = "Synthetic GPU", torch: str = "0.0+synthetic",
                 device: str = "cuda", workload: str = "mlp", params: dict | None = None,
                 dtype: str = "float32", batches=(1, 8, 64, 512, 4096),
                 modes=fmt.MODES, scale: float = 1.0, failing: dict | None = None,
                 uuid: str | None = None, label: str | None = None,
                 created_at: str = "2026-01-01T00:00:00+00:00", intervals: bool = True,
                 launch_us: float = 10.0, overrides: dict | None = None,
                 traces: bool = False) -> dict:
    """A complete synthetic run. `failing` maps (mode, batch) to an error message;
    `overrides` maps (mode, batch) to fields that replace the made-up ones (a noisy point,
    a chosen interval). `intervals=False`: an old-style (version 2) run without any."""
    failing, overrides = failing or {}, overrides or {}
    ms = []
    for mode in modes:
        for b in batches:
            if (mode, b) in failing:
                m = fmt.empty_measurement(mode, b)
                m.update(status="error", message=failing[(mode, b)])
            else:
                m = point(mode, b, scale=scale, device=device, intervals=intervals,
                          launch_us=launch_us, traces=traces)
            m.update(overrides.get((mode, b), {}))
            ms.append(m)
    run = {"uuid": uuid or uuidlib.uuid4().hex, "workload": workload,
           "workload_params": params if params is not None else {"depth": 2, "width": 16},
           "dtype": dtype, "created_at": created_at, "finished_at": created_at,
           "status": "done", "label": label or f"{SYNTHETIC} ({gpu or device})",
           "source": "measured", "command": "python -m runner sweep --workload mlp (synthetic)"}
    doc = fmt.make_bundle(environment(gpu, torch, device), run, ms)
    if not intervals:
        doc["version"] = 2  # what an older runner wrote
    return doc


def points_frame(doc: dict, run_id: int = 1):
    """A bundle's points as the pages read them from the database (one row a point, with
    its run id): the bundle validated first, as an import would."""
    import pandas as pd  # only here: bench/ and the GPU host import this module without it

    return pd.DataFrame(fmt.validate(doc)["measurements"]).assign(run_id=run_id)
