"""Which device a run measures on, and whether this machine has it: the one check that
`sweep`, `serve` and a worker's jobs share (before, each front end had its own copy)."""

from __future__ import annotations

from contract.specs import SpecError


class DeviceError(SpecError):
    """A device this machine does not have. `reason` is the message without the device
    (a front end names it its own way: `--device cuda: ...`)."""

    def __init__(self, device: str, reason: str):
        super().__init__(f"device {device!r}: {reason}", "device")
        self.device, self.reason = device, reason


def torch_installed() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _why_not() -> str:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    why = "torch is built without CUDA" if torch.version.cuda is None else "no GPU is visible"
    return f"{why}; torch {torch.__version__}"


def pick_device(requested: str | None) -> str:
    """The device to measure on: `requested` (cpu, cuda, cuda:N) once checked present, or
    for None the default (cuda when available, else cpu). DeviceError otherwise."""
    if requested == "cpu":
        return "cpu"
    if requested is None:
        return "cuda" if cuda_available() else "cpu"
    if not cuda_available():
        raise DeviceError(requested, f"no CUDA device is available on this machine "
                                     f"({_why_not()})")
    import torch

    idx = int(requested[5:]) if ":" in requested else 0
    if idx >= torch.cuda.device_count():
        raise DeviceError(requested, f"this machine has {torch.cuda.device_count()} CUDA "
                                     "device(s)")
    return requested
