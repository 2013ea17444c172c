"""The workloads' catalog: names, descriptions and typed parameters, torch-free.

The dashboard builds its launch form from WORKLOADS and the queue checks a job's
parameters against it on machines with no torch; the measuring core
(runner/core/workloads.py) builds the models from the same names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from contract.limits import MAX_FEATURES
from contract.model_catalog import MODEL_WORKLOADS
from contract.params import PARAM_TYPES, ParamSpec, WorkloadError, WorkloadInfo
from contract.vocab import DTYPES

__all__ = ["PARAM_TYPES", "ParamSpec", "WorkloadError", "WorkloadInfo", "WORKLOADS",
           "check_workload", "is_factory"]

def _dtype_param(default: str = "float32") -> ParamSpec:
    return ParamSpec("dtype", "choice", default, choices=DTYPES,
                     help="parameter and activation dtype")


WORKLOADS: dict[str, WorkloadInfo] = {
    "mlp": WorkloadInfo(
        "mlp",
        "depth x (Linear(width, width) + ReLU): many tiny kernels, the classic "
        "launch-bound case (the seed experiment: depth 32, width 256, fp32)",
        {
            "depth": ParamSpec("depth", "int", 32, 1, 1024, help="number of Linear+ReLU layers"),
            "width": ParamSpec("width", "int", 256, 1, MAX_FEATURES, help="features per layer"),
            "dtype": _dtype_param(),
        },
    ),
    "transformer-decode": WorkloadInfo(
        "transformer-decode",
        "small decoder stack doing one-token decode steps against a static KV cache of "
        "kv_len tokens per sequence; batch = sequences (an LLM decode loop)",
        {
            "layers": ParamSpec("layers", "int", 8, 1, 128, help="decoder layers"),
            "d_model": ParamSpec("d_model", "int", 512, 8, 16384, help="model width"),
            "heads": ParamSpec("heads", "int", 8, 1, 256, help="attention heads"),
            "kv_len": ParamSpec("kv_len", "int", 128, 1, MAX_FEATURES,
                                help="cached tokens per sequence (KV cache length)"),
            "vocab": ParamSpec("vocab", "int", 4096, 2, 1_000_000, help="vocabulary size"),
            "dtype": _dtype_param("bfloat16"),
        },
        check=lambda p: _divisible(p, "d_model"),
    ),
    "train-step": WorkloadInfo(
        "train-step",
        "one training step (forward, MSE loss, backward, AdamW step) of a small model: "
        "the mlp shape by default, or model=transformer for pre-norm transformer blocks "
        "over seq tokens; batch = samples",
        {
            "model": ParamSpec("model", "choice", "mlp", choices=("mlp", "transformer"),
                               help="mlp: depth x (Linear+ReLU); transformer: blocks x "
                                    "(attention + MLP)"),
            "depth": ParamSpec("depth", "int", 32, 1, 1024,
                               help="Linear+ReLU layers (model=mlp)"),
            "width": ParamSpec("width", "int", 256, 8, MAX_FEATURES,
                               help="features per layer (mlp) or d_model (transformer)"),
            "blocks": ParamSpec("blocks", "int", 1, 1, 64,
                                help="transformer blocks (model=transformer)"),
            "heads": ParamSpec("heads", "int", 4, 1, 256,
                               help="attention heads (model=transformer)"),
            "seq": ParamSpec("seq", "int", 16, 1, 4096,
                             help="tokens per sample (model=transformer)"),
            "dtype": _dtype_param(),
        },
        check=lambda p: _divisible(p, "width") if p["model"] == "transformer" else None,
    ),
    "kernel-chain": WorkloadInfo(
        "kernel-chain",
        "a chain of `kernels` tiny dependent elementwise kernels on a tensor of batch "
        "elements: the launch cost per kernel, eager against one graph launch (the "
        "host's launch-cost calibration is this chain at batch 1)",
        {
            "kernels": ParamSpec("kernels", "int", 20, 1, 10000,
                                 help="dependent elementwise kernels per step"),
            "dtype": _dtype_param(),
        },
    ),
}
# The transformers and timm workloads: their entries live in their own leaf module.
WORKLOADS.update(MODEL_WORKLOADS)


def _divisible(p: Mapping[str, Any], width: str) -> str | None:
    if p[width] % p["heads"]:
        return f"{width} {p[width]} is not divisible by heads {p['heads']}"
    return None

_FACTORY_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")




def is_factory(name: str) -> bool:
    """A user factory's name (module.path:factory), which only the CLI may import."""
    return ":" in name


def check_workload(name: str, params: dict[str, str] | None = None, *,
                   allow_import: bool = True) -> tuple[str, Mapping[str, Any]]:
    """Check a workload name and its raw parameters; return (name, typed parameters with
    defaults filled in). A user factory's parameters stay text: its signature is checked
    where it is imported (runner/core/workloads.py)."""
    params = dict(params or {})
    name = (name or "").strip()
    if name in WORKLOADS:
        info = WORKLOADS[name]
        unknown = sorted(set(params) - set(info.params))
        if unknown:
            raise WorkloadError(f"workload {name!r} has no parameter {unknown[0]!r} (known: "
                                f"{', '.join(info.params)})")
        typed = {k: (spec.parse(params[k], name) if k in params else spec.default)
                 for k, spec in info.params.items()}
        check = info.check_untrusted if not allow_import and info.check_untrusted \
            else info.check
        problem = check(typed) if check else None
        if problem:
            raise WorkloadError(f"workload {name!r}: {problem}")
        return name, typed
    if is_factory(name):
        if not allow_import:
            raise WorkloadError(f"workload {name!r}: user factories are accepted from the "
                                "command line only")
        if not _FACTORY_RE.match(name):
            raise WorkloadError(f"workload {name!r} is not of the form module.path:factory")
        return name, {k: str(v) for k, v in params.items()}
    raise WorkloadError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)}, or "
                        "module.path:factory)")
