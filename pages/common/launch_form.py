"""The launch form's logic, free of streamlit: what the fields offer, their defaults, and
turning what was typed into a job spec with one clear message per bad field.

Only registered workloads can be chosen, every parameter is bounded by its ParamSpec, and
nothing typed here can name an import path, a shell command or a file: the form builds
data that db.jobs.check_spec checks once more where it is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.format.catalog import WORKLOADS, WorkloadError
from runner.format.specs import SpecError, check_sweep, check_text, parse_batch_sizes
from runner.format.vocab import MODES, TIMINGS

DEVICES = {"auto": "auto (the worker's: cuda if it has one)", "cuda": "cuda", "cpu": "cpu"}
BATCH_PRESETS = {
    "powers of two 1..8192": "1,2,4,...,8192",
    "powers of two 1..512": "1,2,4,...,512",
    "small: 1, 8, 64": "1,8,64",
}
CUSTOM = "custom list"
DEFAULTS = {"workload": "mlp", "modes": list(MODES), "batch_preset": next(iter(BATCH_PRESETS)),
            "custom_batches": "1,8,64,512", "timing": "standard", "device": "auto",
            "target": "", "label": ""}


@dataclass
class Checked:
    """A checked form: the spec to queue, or errors by field name (never both)."""

    spec: dict[str, Any] | None = None
    target: str | None = None
    errors: dict[str, str] = field(default_factory=dict)


def param_fields(workload: str) -> list[dict[str, Any]]:
    """What a widget needs per parameter: kind, bounds, default, help."""
    out = []
    for p in WORKLOADS[workload].params.values():
        out.append({"name": p.name, "kind": p.type, "default": p.default,
                    "min": p.min, "max": p.max, "choices": list(p.choices or ()),
                    "help": p.help})
    return out


def batch_sizes(preset: str, custom: str) -> list[int]:
    """The sizes a preset (or the custom text) stands for; ValueError names the bad one.
    The same parser as the CLI's --batch-sizes (runner/format/specs.py)."""
    text = BATCH_PRESETS.get(preset) if preset != CUSTOM else custom
    if text is None:
        raise ValueError(f"unknown batch size preset {preset!r}")
    if not text.strip():
        raise ValueError("give at least one batch size, e.g. 1,8,64")
    return list(parse_batch_sizes(text))


def check(values: dict[str, Any]) -> Checked:
    """`values`: workload, params (name -> value as the widget gave it), modes,
    batch_preset, custom_batches, timing, device, target, label."""
    errors: dict[str, str] = {}
    workload = values.get("workload")
    params: dict[str, str] = {}
    if workload not in WORKLOADS:
        errors["workload"] = f"unknown workload {workload!r}: choose one of " \
                             f"{', '.join(WORKLOADS)}"
    else:
        raw = values.get("params") or {}
        for p in WORKLOADS[workload].params.values():
            if p.name in raw and raw[p.name] is not None:
                v = raw[p.name]
                # A whole float from a number widget is still an int parameter's value.
                params[p.name] = str(int(v)) if isinstance(v, float) and v.is_integer() \
                    and p.type == "int" else str(v)
            try:
                p.parse(params.get(p.name, p.default), workload)
            except WorkloadError as e:
                errors[f"param.{p.name}"] = str(e)
    modes = list(values.get("modes") or [])
    if not modes:
        errors["modes"] = "choose at least one mode"
    try:
        sizes = batch_sizes(values.get("batch_preset") or "", values.get("custom_batches")
                            or "")
    except ValueError as e:
        errors["batch_sizes"] = f"batch sizes: {e}"
        sizes = []
    timing = values.get("timing")
    if timing not in TIMINGS:
        errors["timing"] = f"timing {timing!r} is not one of {', '.join(TIMINGS)}"
    device = values.get("device")
    if device not in DEVICES:
        errors["device"] = f"device {device!r} is not one of {', '.join(DEVICES)}"
    target = None
    try:
        target = check_text(values.get("target"), "target")
    except SpecError as e:
        errors["target"] = str(e)
    if errors:
        return Checked(errors=errors)
    raw = {"workload": workload, "params": params, "batch_sizes": sizes, "modes": modes,
           "device": device, "timing": timing,
           "label": str(values.get("label") or "")}
    try:  # the queue's own check, so the form refuses exactly what enqueue would
        spec = check_sweep(raw, queued=True)
    except SpecError as e:
        return Checked(errors={e.field: str(e)})
    except WorkloadError as e:
        return Checked(errors={"params": str(e)})
    return Checked(spec={**raw, "timing": spec.timing, "label": spec.label}, target=target)


def describe_point(job: dict[str, Any]) -> str:
    """'eager batch 64' while running, else the job's status."""
    return job.get("current_point") or job.get("status") or ""


def format_seconds(s: float | None) -> str:
    if s is None:
        return "—"
    s = int(round(s))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else (
        f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s")


def queue_rows(queue: list[dict[str, Any]], base_url: str | None) -> list[dict[str, Any]]:
    """The queue table: one row per job, a link to its run once there is one."""
    from pages.common.links import run_url

    return [{"job": j["id"], "status": j["status"], "workload": j["spec"].get("workload"),
             "points": f"{j['points_done']}/{j['points_total']}",
             "now": j["current_point"] or "", "device": j["device"],
             "target": j["target"] or "any", "worker": j["worker_name"] or "",
             "label": j["label"] or "",
             "slurm": f"{j['slurm_job_id']} ({j['gpu_type']})" if j.get("slurm_job_id")
             else "",
             "run": run_url(base_url, j["run_id"]) if j["run_id"] else None}
            for j in queue]


def worker_rows(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"worker": w["name"], "host": w["hostname"], "GPU": w["gpu_name"] or "none (cpu)",
             "torch": w["torch_version"], "pid": w["pid"]} for w in workers]
