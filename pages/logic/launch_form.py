"""The launch form's logic, free of streamlit: what the fields offer, their defaults, and
turning what was typed into a job spec with one clear message per bad field.

Only registered workloads can be chosen, every parameter is bounded by its ParamSpec, and
nothing typed here can name an import path, a shell command or a file: the form builds
data, checked here once (the queue's own check) and queued as a SweepSpec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import pandas as pd

from contract.catalog import WORKLOADS, WorkloadError
from contract.limits import (
    DEFAULT_GPU_MEMORY_BYTES,
    MAX_BATCH_SIZE,
    MAX_BATCH_SIZES,
    MAX_JOB_POINTS,
    MAX_QUEUED_JOBS,
    MAX_QUEUED_PER_SESSION,
    MEMORY_HEADROOM,
)
from contract.queue import Job, Worker
from contract.specs import (
    SpecError,
    SweepSpec,
    check_sweep,
    check_text,
    estimate_cost,
    gib,
    parse_batch_sizes,
)
from contract.vocab import CUDA_GRAPH_MODES, MODES, TIMINGS

# (the auto label fits a third of the form at 1280 px: a longer one was cut by 2 px)
DEVICES = {"auto": "auto (cuda if the worker has one)", "cuda": "cuda", "cpu": "cpu"}
BATCH_PRESETS = {
    "powers of two 1..8192": "1,2,4,...,8192",
    "powers of two 1..512": "1,2,4,...,512",
    "small: 1, 8, 64": "1,8,64",
}
CUSTOM = "custom list"
SMALL_PRESET = "small: 1, 8, 64"


class FormDefaults(TypedDict):
    """DEFAULTS: each field's first value, by the field's name."""
    workload: str
    modes: list[str]
    batch_preset: str
    custom_batches: str
    timing: str
    device: str
    target: str
    label: str
    energy: bool


# A small sweep by default (issue 46): 4 modes x 14 batch sizes, 56 points, was minutes on
# a GPU and most of an hour on a CPU for someone who only tried the button.
DEFAULTS: FormDefaults = {
    "workload": "mlp", "modes": list(MODES), "batch_preset": SMALL_PRESET,
    "custom_batches": "1,8,64,512", "timing": "standard", "device": "auto",
    "target": "", "label": "", "energy": True}


@dataclass(frozen=True)
class Defaults:
    """The form's first values (DEFAULTS, fitted to the host by host_defaults)."""

    workload: str = DEFAULTS["workload"]
    modes: tuple[str, ...] = tuple(MODES)
    batch_preset: str = SMALL_PRESET
    custom_batches: str = DEFAULTS["custom_batches"]
    timing: str = DEFAULTS["timing"]
    energy: bool = True


def host_defaults(workers: Sequence[Worker], here: str | None) -> Defaults:
    """The form's defaults for the host the job will run on: where no live worker has
    CUDA and the worker Launch starts would run on this machine's CPU (`here`, runner.
    ops.launcher.local_device: 'cpu'), no CUDA-graph mode (each would be "unsupported"
    there) and no NVML energy (no GPU to read). Unknown (no worker, no torch here): a
    GPU's defaults, since the job then waits for a GPU host's worker."""
    cpu_only = not any(w.has_cuda for w in workers) and (bool(workers) or here == "cpu")
    if not cpu_only:
        return Defaults()
    return Defaults(modes=tuple(m for m in MODES if m not in CUDA_GRAPH_MODES),
                    energy=False)


@dataclass
class Checked:
    """A checked form: the spec to queue, or errors by field name (never both)."""

    spec: SweepSpec | None = None  # checked as the queue checks it: what is queued
    target: str | None = None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ParamField:
    """What a widget needs of one workload parameter (its ParamSpec, as the form shows it)."""

    name: str
    kind: str  # "int", "float", "choice" or "str"
    default: Any
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    help: str | None = None


def param_fields(workload: str) -> list[ParamField]:
    """What a widget needs per parameter: kind, bounds, default, help."""
    out = []
    for p in WORKLOADS[workload].params.values():
        if p.default is None:  # an optional override (hf-causal-lm's layers=): CLI only
            continue
        out.append(ParamField(name=p.name, kind=p.type, default=p.default, min=p.min,
                              max=p.max, choices=tuple(p.choices or ()), help=p.help))
    return out


def field_help(f: ParamField) -> str | None:
    """A parameter's help with its allowed range in words."""
    parts = [f.help] if f.help else []
    if f.kind in ("int", "float") and f.min is not None and f.max is not None:
        parts.append(f"allowed: {f.min:,} to {f.max:,}")
    return ". ".join(parts) or None


def batch_sizes(preset: str, custom: str) -> list[int]:
    """The sizes a preset (or the custom text) stands for; ValueError names the bad one.
    The same parser as the CLI's --batch-sizes (contract/specs.py)."""
    text = BATCH_PRESETS.get(preset) if preset != CUSTOM else custom
    if text is None:
        raise ValueError(f"unknown batch size preset {preset!r}")
    if not text.strip():
        raise ValueError("give at least one batch size, e.g. 1,8,64")
    return list(parse_batch_sizes(text))


@dataclass(frozen=True)
class FormValues:
    """The Launch form as its widgets gave it, before any check."""

    workload: str | None
    params: Mapping[str, Any] = field(default_factory=dict)  # name -> widget value
    modes: Sequence[str] = ()
    batch_preset: str = ""
    custom_batches: str = ""
    timing: str | None = None
    device: str | None = None
    target: str | None = None
    label: str = ""
    energy: bool = True  # the energy windows (issue 28); default on


def check(values: FormValues) -> Checked:
    """The form's values checked: a spec to queue, or one message per bad field."""
    errors: dict[str, str] = {}
    workload = values.workload
    params: dict[str, str] = {}
    if workload not in WORKLOADS:
        errors["workload"] = f"unknown workload {workload!r}: choose one of " \
                             f"{', '.join(WORKLOADS)}"
    else:
        raw = values.params or {}
        for p in WORKLOADS[workload].params.values():
            if p.name in raw and raw[p.name] is not None:
                v = raw[p.name]
                # A whole float from a number widget is still an int parameter's value.
                params[p.name] = str(int(v)) if isinstance(v, float) and v.is_integer() \
                    and p.type == "int" else str(v)
            if p.name not in params and p.default is None:
                continue  # an override not given: the model's own value
            try:
                p.parse(params.get(p.name, p.default), workload)
            except WorkloadError as e:
                errors[f"param.{p.name}"] = str(e)
    modes = list(values.modes or [])
    if not modes:
        errors["modes"] = "choose at least one mode"
    try:
        sizes = batch_sizes(values.batch_preset or "", values.custom_batches or "")
    except ValueError as e:
        errors["batch_sizes"] = f"batch sizes: {e}"
        sizes = []
    timing = values.timing
    if timing not in TIMINGS:
        errors["timing"] = f"timing {timing!r} is not one of {', '.join(TIMINGS)}"
    device = values.device
    if device not in DEVICES:
        errors["device"] = f"device {device!r} is not one of {', '.join(DEVICES)}"
    target = None
    try:
        target = check_text(values.target, "target")
    except SpecError as e:
        errors["target"] = str(e)
    if errors:
        return Checked(errors=errors)
    raw = {"workload": workload, "params": params, "batch_sizes": sizes, "modes": modes,
           "device": device, "timing": timing,
           "label": str(values.label or ""), "energy": values.energy}
    try:  # the queue's own check, so the form refuses exactly what enqueue would
        spec = check_sweep(raw, queued=True)
    except SpecError as e:
        return Checked(errors={e.field: str(e)})
    except WorkloadError as e:
        return Checked(errors={"params": str(e)})
    return Checked(spec=spec, target=target)


def describe_point(job: Job) -> str:
    """'eager batch 64' while running, else the job's status."""
    return job.current_point or job.status or ""


def queue_rows(queue: list[Job], base_url: str | None) -> pd.DataFrame:
    """The queue table: one row per job, a link to its run once there is one."""
    from pages.logic.links import run_url

    return pd.DataFrame([{"job": j.id, "status": j.shown, "workload": j.workload,
             "points": f"{j.points_done}/{j.points_total}",
             "now": j.current_point or "", "device": j.device,
             "target": j.target or "any", "worker": j.worker_name or "",
             "label": j.label or "",
             "slurm": f"{j.slurm_job_id} ({j.gpu_type})" if j.slurm_job_id else "",
             "run": run_url(base_url, j.run_id) if j.run_id else None}
            for j in queue])


def worker_rows(workers: list[Worker]) -> pd.DataFrame:
    """The workers table: one row per live worker."""
    return pd.DataFrame([{"worker": w.name, "host": w.hostname, "GPU": w.gpu_name or "none (cpu)",
             # The GPU it is pinned to on its host (`worker --gpu N`), and its host policy.
             "slot": None if w.host_slot is None else f"gpu{w.host_slot}",
             "timing": w.host_policy,
             "torch": w.torch_version, "pid": w.pid} for w in workers])


# --- before Launch: who will run it (how long: launch_estimate.py) ----------------------------


def history_gpu(device: str, target: str | None, workers: list[Worker],
                can_serve: Callable[[Worker, Job], bool], here: str | None) -> str | None:
    """Which device's past runs tell how long the job takes: 'cpu' or a GPU's name; None
    when that is not known before a worker takes the job. A target names it (a worker's
    name stands for that worker's GPU); without one, the live workers that can serve the
    job when they share one device, else the worker Launch starts on this machine, whose
    device is `here` (runner.ops.launcher.local_device; None: none starts or unknown)."""
    if device == "cpu":
        return "cpu"
    t = (target or "").strip()
    if t:
        for w in workers:
            if (w.name or "").lower() == t.lower():
                return w.gpu_name or "cpu"
        return t
    job = Job(id=0, device=device)
    kinds = {w.gpu_name or "cpu" for w in workers if can_serve(w, job)}
    if kinds:
        return kinds.pop() if len(kinds) == 1 else None
    return None if device == "cuda" and here == "cpu" else here


def job_gpu(job: Job, workers: list[Worker]) -> str | None:
    """The device a job in flight runs on: 'cpu', the GPU of the worker that took it (a
    Slurm job's GPU type while none has), or None while unknown (queued, or its worker
    no longer live)."""
    if job.device == "cpu":
        return "cpu"
    for w in workers:
        if job.worker_name and w.name == job.worker_name:
            return w.gpu_name or "cpu"
    return job.gpu_type


def no_worker_reason(workers: list[Worker], device: str, target: str | None,
                     can_start_here: bool,
                     can_serve: Callable[[Worker, Job], bool]) -> str | None:
    """Why no live worker can serve a job of `device` on `target`, with what to start;
    None when one can (or, without a target, when Launch starts one on this machine).
    `can_serve`: the queue's own matching rule (db.jobs.can_serve, through the door)."""

    # The job as it would be queued (id 0: not yet), for the queue's own matching rule.
    job = Job(id=0, device=device, target=(target or "").strip() or None)
    if any(can_serve(w, job) for w in workers):
        return None
    start = "`python -m runner worker --db URL`"
    if job.target:
        live = ", ".join(sorted({f"{w.name} ({w.gpu_name or 'cpu'})"
                                 for w in workers})) or "none"
        return (f"No worker matches target {job.target!r} (live workers: {live}). Start "
                f"`python -m runner worker --name {job.target} --db URL` on that host, "
                "or leave the target empty; the job waits in the queue until then.")
    if device == "cuda":
        if not workers and can_start_here:
            return None  # Launch starts one here; it serves the job if this host has CUDA
        return ("No live worker has CUDA. Start " + start + " on a GPU host against this "
                "database; the job waits in the queue until then.")
    if not workers and not can_start_here:
        return ("No live worker, and this dashboard's host has no torch to start one. Start "
                + start + " on a host with torch; the job waits in the queue until then.")
    return None


def field_errors(errors: dict[str, str], names: list[str]) -> dict[str, str]:
    """Errors keyed by parameter name (the form shows each beside its field)."""
    return {n: errors[f"param.{n}"] for n in names if f"param.{n}" in errors}


# --- what one job may cost, and how many may wait ---------------------------------------------

def limits_text(memory_bytes: int | None, where: str) -> str:
    """The queue's limits in words, shown on the form: what enqueue refuses."""
    whose = f"{where}'s {gib(memory_bytes)}" if memory_bytes is not None else (
        f"{gib(DEFAULT_GPU_MEMORY_BYTES)}, assumed while the target's memory is unknown")
    return (f"Limits: at most {MAX_JOB_POINTS} points (modes x batch sizes) and "
            f"{MAX_BATCH_SIZES} batch sizes of up to {MAX_BATCH_SIZE} per job; the "
            f"estimated peak memory must fit in {MEMORY_HEADROOM:.0%} of {whose}; at most "
            f"{MAX_QUEUED_PER_SESSION} waiting jobs from this session, and none while "
            f"the queue holds {MAX_QUEUED_JOBS}.")


def cost(spec: SweepSpec, memory_bytes: int | None) -> tuple[str, str | None]:
    """(the job's estimated cost in words, why the queue refuses it or None)."""
    c = estimate_cost(spec.workload, spec.params, spec.batch_sizes, spec.modes)
    memory = ("memory not estimated for this workload" if c.memory_bytes is None else
              f"estimated peak memory {gib(c.memory_bytes)} (from the model's shapes, at "
              f"batch size {max(spec.batch_sizes)})")
    refusal = c.refusal(memory_bytes)
    if c.points > MAX_JOB_POINTS:
        refusal = (f"{c.points} points is more than {MAX_JOB_POINTS} for one job: fewer "
                   "modes or batch sizes")
    return f"{c.points} point(s) · {memory}", refusal
