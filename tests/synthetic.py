"""SYNTHETIC bundles for tests and the dashboard speed benchmark only.

The figures follow a made-up launch-bound model (fixed host cost per launch plus a kernel
time that grows with batch size) so curves have a plausible shape. They are not
measurements, are labelled SYNTHETIC wherever they appear, and never go to data/samples/.
"""

from __future__ import annotations

import uuid as uuidlib

from runner import bundle as fmt

SYNTHETIC = "SYNTHETIC test data"
MIB = 1024 * 1024

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


def point(mode: str, batch: int, *, scale: float = 1.0, device: str = "cuda") -> dict:
    m = fmt.empty_measurement(mode, batch)
    if device == "cpu" and mode in ("reduce-overhead", "cuda-graph"):
        m.update(status="unsupported", message=f"{mode} needs CUDA; this run is on cpu")
        return m
    fixed, factor, host, graph, setup = _SHAPE[mode]
    kernel = (0.10 + 0.0002 * batch) * factor * scale
    step = fixed * scale + kernel
    m.update(step_ms=step, step_ms_p10=step * 0.97, step_ms_p90=step * 1.05, samples=20,
             latency_ms=step * 1.1, setup_s=setup, samples_ms=[step] * 5,
             details={"note": SYNTHETIC})
    if device == "cuda":
        pool = (32 * MIB + batch * 4096) if graph else 0
        m.update(host_launches_per_step=host, graph_launches_per_step=graph,
                 gpu_kernels_per_step=64, gpu_busy_ms=kernel, graph_pool_bytes=pool,
                 peak_allocated_bytes=batch * 32 * 1024 + 8 * MIB, reserved_delta_bytes=pool,
                 cudagraph_status="replay" if graph else "n/a", correct=True,
                 max_abs_err=1e-6)
    return m


def sweep_bundle(*, gpu: str | None = "Synthetic GPU", torch: str = "0.0+synthetic",
                 device: str = "cuda", workload: str = "mlp", params: dict | None = None,
                 dtype: str = "float32", batches=(1, 8, 64, 512, 4096),
                 modes=fmt.MODES, scale: float = 1.0, failing: dict | None = None,
                 uuid: str | None = None, label: str | None = None,
                 created_at: str = "2026-01-01T00:00:00+00:00") -> dict:
    """A complete synthetic run. `failing` maps (mode, batch) to an error message."""
    failing = failing or {}
    ms = []
    for mode in modes:
        for b in batches:
            if (mode, b) in failing:
                m = fmt.empty_measurement(mode, b)
                m.update(status="error", message=failing[(mode, b)])
            else:
                m = point(mode, b, scale=scale, device=device)
            ms.append(m)
    run = {"uuid": uuid or uuidlib.uuid4().hex, "workload": workload,
           "workload_params": params if params is not None else {"depth": 2, "width": 16},
           "dtype": dtype, "created_at": created_at, "finished_at": created_at,
           "status": "done", "label": label or f"{SYNTHETIC} ({gpu or device})",
           "source": "measured", "command": "python -m runner sweep --workload mlp (synthetic)"}
    return fmt.make_bundle(environment(gpu, torch, device), run, ms)
