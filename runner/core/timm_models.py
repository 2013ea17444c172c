"""`timm`: a timm image model, pretrained=False (random weights), inference at the image
size its config names.

timm is imported here only, when the workload is resolved or built (the measuring core
needs torch alone). timm imports torchvision at import time, and PyPI's torchvision does not
load beside a CPU torch build: where it will not import, this says so in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract.catalog import WorkloadError
from contract.model_catalog import MODELS_EXTRA

NAME = "timm"


def require_timm():
    try:
        import timm
    except ImportError as e:
        why = "" if getattr(e, "name", None) == "timm" else f" ({str(e).splitlines()[0][:200]})"
        raise WorkloadError(f"workload {NAME!r} needs timm{why}: {MODELS_EXTRA}") from None
    except Exception as e:  # noqa: BLE001 - torchvision failing to load beside this torch
        raise WorkloadError(f"workload {NAME!r}: timm does not import here: "
                            f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    return timm


def check(params: Mapping[str, Any]) -> None:
    timm = require_timm()
    if not timm.is_model(params["model"]):
        raise WorkloadError(f"workload {NAME!r}: unknown timm model {params['model']!r} "
                            "(timm.list_models() lists them)")


def input_size(model) -> tuple[int, ...]:
    """(channels, height, width) from the model's pretrained config (timm's own default
    when a model has none)."""
    cfg = getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", None) or {}
    size = cfg.get("input_size") or (3, 224, 224)
    return tuple(int(x) for x in size)


def build(params: Mapping[str, Any], dtype, device: str):
    import torch

    timm = require_timm()
    check(params)
    model = timm.create_model(params["model"], pretrained=False)
    model = model.to(device=device, dtype=dtype).eval()
    c, h, w = input_size(model)

    def make_input(batch_size: int, generator=None):
        x = torch.randn(batch_size, c, h, w, generator=generator, dtype=torch.float32)
        return x.to(device=device, dtype=dtype)

    return model, make_input
