"""What a run was measured on (docs/ARCHITECTURE.md, "The result bundle"), and GPU clocks.

Clocks and temperature are only read (docs/MEASUREMENT.md, "Left alone"): a locked clock would make
the figures unlike what a user gets. torch's NVML wrappers are used when NVML is
importable (cheap, no process start); nvidia-smi otherwise; None when neither answers.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess

from contract.measurement import Clocks
from contract.numbers import number_or_none
from contract.run_record import Environment, EnvironmentJson


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _nvidia_smi(query: str, index: int = 0) -> list[str] | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, f"--query-gpu={query}", "--format=csv,noheader,nounits",
                              "-i", _smi_index(index)], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]


def capture(device: str) -> Environment:
    import torch

    env: EnvironmentJson = {  # Environment's fields, all of them
        "device": "cuda" if device.startswith("cuda") else "cpu",
        "gpu_name": None, "gpu_count": None, "sm_count": None, "gpu_memory_bytes": None,
        "driver_version": None, "cuda_version": torch.version.cuda,
        "torch_version": torch.__version__, "triton_version": None,
        "python_version": platform.python_version(), "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
    }
    try:
        import triton

        env["triton_version"] = getattr(triton, "__version__", None)
    except Exception:  # triton missing or broken: the field is unknown, not an error
        pass
    # Known even without a GPU (0), unlike the per-GPU fields below.
    env["gpu_count"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if env["device"] == "cuda":
        idx = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(idx)
        env.update({"gpu_name": props.name, "sm_count": props.multi_processor_count,
                    "gpu_memory_bytes": int(props.total_memory)})
        smi = _nvidia_smi("driver_version", idx)
        env["driver_version"] = smi[0] if smi else None
    return Environment(**env)


def _smi_index(index: int) -> str:
    """nvidia-smi ignores CUDA_VISIBLE_DEVICES: a worker pinned to GPU 3 sees it as cuda:0,
    and asking nvidia-smi for 0 would read GPU 0's clocks. Entry `index` of the list (an
    index or a UUID, both of which -i takes) is the GPU torch means."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    return visible[index] if index < len(visible) and visible[index] else str(index)


def read_clocks(device: str) -> Clocks:
    """SM clock (MHz), memory clock (MHz), temperature (C), power (W); None = unknown."""
    import torch

    idx = torch.device(device).index or 0
    out = Clocks()
    try:  # NVML through torch (needs the nvidia-ml-py package): milliseconds
        out.sm_clock_mhz = number_or_none(torch.cuda.clock_rate(idx))
        out.temperature_c = number_or_none(torch.cuda.temperature(idx))
        power_mw = number_or_none(torch.cuda.power_draw(idx))
        if power_mw is None:  # what None / 1e3 raised: nvidia-smi answers instead, below
            raise TypeError("NVML gave no power figure")
        out.power_w = power_mw / 1e3
        return out
    except Exception:  # no NVML or an older torch: ask nvidia-smi
        pass
    smi = _nvidia_smi("clocks.sm,clocks.mem,temperature.gpu,power.draw", idx)
    if smi and len(smi) == 4:
        out = Clocks(sm_clock_mhz=number_or_none(smi[0]),
                     mem_clock_mhz=number_or_none(smi[1]),
                     temperature_c=number_or_none(smi[2]), power_w=number_or_none(smi[3]))
    return out
