"""Workloads: the models a sweep measures, as a registry the dashboard can read.

Torch-free at import: the dashboard builds its launch form from WORKLOADS on a machine
that may have no torch. torch is imported inside the build functions only.

A workload's model may define `prepare_batch(batch_size)`: the runner calls it once per
point before anything is compiled or captured. It sizes static state (a KV cache) as
buffers, so compiled modes see fixed addresses and nothing is mutated inside a step.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float32", "float16", "bfloat16")
PARAM_TYPES = ("int", "float", "str", "choice")


class WorkloadError(ValueError):
    """Bad workload name or parameter; str() is one line naming the bad value."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str  # one of PARAM_TYPES
    default: Any
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    help: str = ""

    def parse(self, raw: Any, workload: str) -> Any:
        """One raw value (text from a CLI flag or a form) to its typed value."""
        where = f"workload {workload!r} parameter {self.name!r}"
        text = str(raw).strip()
        if self.type == "choice":
            if text not in (self.choices or ()):
                raise WorkloadError(f"{where}: {text!r} is not one of "
                                    f"{', '.join(self.choices or ())}")
            return text
        if self.type == "str":
            return text
        kind = "an integer" if self.type == "int" else "a number"
        try:
            value = int(text) if self.type == "int" else float(text)
        except ValueError:
            raise WorkloadError(f"{where}: {text!r} is not {kind}") from None
        if self.type == "float" and not math.isfinite(value):
            raise WorkloadError(f"{where}: {text!r} is not a finite number")
        lo = self.min if self.min is not None else -math.inf
        hi = self.max if self.max is not None else math.inf
        if not lo <= value <= hi:
            raise WorkloadError(f"{where}: {text!r} is outside {lo:g}..{hi:g}")
        return value


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    description: str
    params: dict[str, ParamSpec]


@dataclass(frozen=True)
class Workload:
    """A resolved workload: typed parameters with defaults filled in, ready to build."""

    name: str
    params: dict[str, Any]
    dtype: str | None  # None: a user factory that does not say
    builder: Callable[[Workload, str], tuple[Any, Callable]] = field(repr=False)

    def build(self, device: str) -> tuple[Any, Callable]:
        """(model on `device` in eval mode, make_input(batch_size, generator) -> input)."""
        return self.builder(self, device)


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "float16": torch.float16,
            "bfloat16": torch.bfloat16}[name]


# --- mlp: the seed experiment ------------------------------------------------------------

def _build_mlp(w: Workload, device: str):
    import torch
    from torch import nn

    width, dtype = w.params["width"], _torch_dtype(w.params["dtype"])
    layers: list[nn.Module] = []
    for _ in range(w.params["depth"]):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers).to(device=device, dtype=dtype).eval()

    def make_input(batch_size: int, generator=None):
        # Drawn on the CPU so a seeded CPU generator gives the same input on any device.
        x = torch.randn(batch_size, width, generator=generator, dtype=torch.float32)
        return x.to(device=device, dtype=dtype)

    return model, make_input


# --- transformer-decode: one-token decode steps against a static KV cache -----------------

def _build_decoder(w: Workload, device: str):
    import torch

    from runner.decoder import Decoder

    p = w.params
    if p["d_model"] % p["heads"]:
        raise WorkloadError(f"workload 'transformer-decode': d_model {p['d_model']} is not "
                            f"divisible by heads {p['heads']}")
    model = Decoder(layers=p["layers"], d_model=p["d_model"], heads=p["heads"],
                    kv_len=p["kv_len"], vocab=p["vocab"])
    model = model.to(device=device, dtype=_torch_dtype(p["dtype"])).eval()

    def make_input(batch_size: int, generator=None):
        # One new token per sequence: batch = sequences decoding in lockstep.
        ids = torch.randint(0, p["vocab"], (batch_size,), generator=generator)
        return ids.to(device)

    return model, make_input


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
            "width": ParamSpec("width", "int", 256, 1, 65536, help="features per layer"),
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
            "kv_len": ParamSpec("kv_len", "int", 128, 1, 65536,
                                help="cached tokens per sequence (KV cache length)"),
            "vocab": ParamSpec("vocab", "int", 4096, 2, 1_000_000, help="vocabulary size"),
            "dtype": _dtype_param("bfloat16"),
        },
    ),
}

_BUILDERS = {"mlp": _build_mlp, "transformer-decode": _build_decoder}

_FACTORY_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def resolve(name: str, params: dict[str, str] | None = None, *,
            allow_import: bool = True) -> Workload:
    """Validate a workload name and its raw parameters; return a buildable Workload."""
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
        return Workload(name, typed, typed["dtype"], _BUILDERS[name])
    if ":" in name:
        if not allow_import:
            raise WorkloadError(f"workload {name!r}: user factories are accepted from the "
                                "command line only")
        return _resolve_factory(name, params)
    raise WorkloadError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)}, or "
                        "module.path:factory)")


def _resolve_factory(name: str, params: dict[str, str]) -> Workload:
    if not _FACTORY_RE.match(name):
        raise WorkloadError(f"workload {name!r} is not of the form module.path:factory")
    module_name, attr = name.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # any import failure of user code is bad input, one line
        raise WorkloadError(f"workload {name!r}: cannot import {module_name!r}: "
                            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                            ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise WorkloadError(f"workload {name!r}: {module_name!r} has no callable {attr!r}")
    try:
        sig = inspect.signature(factory)
        wants_device = "device" in sig.parameters
        sig.bind(**params, **({"device": "cpu"} if wants_device else {}))
    except (TypeError, ValueError) as e:
        raise WorkloadError(f"workload {name!r}: parameters {sorted(params)} do not fit "
                            f"the factory: {e}") from None
    clean = {k: str(v) for k, v in params.items()}
    return Workload(name, clean, clean.get("dtype") or None,
                    lambda w, device: _build_factory(factory, wants_device, w, device))


def _build_factory(factory, wants_device: bool, w: Workload, device: str):
    import torch

    kwargs = dict(w.params, **({"device": device} if wants_device else {}))
    result = factory(**kwargs)
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
        raise WorkloadError(f"workload {w.name!r}: the factory must return "
                            "(model, example_input_fn)")
    model, input_fn = result
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    try:  # example_input_fn(batch_size) or example_input_fn(batch_size, generator)
        takes_gen = len(inspect.signature(input_fn).parameters) >= 2
    except (TypeError, ValueError):
        takes_gen = False

    def make_input(batch_size: int, generator=None):
        x = input_fn(batch_size, generator) if takes_gen else input_fn(batch_size)
        return x.to(device) if isinstance(x, torch.Tensor) else x

    return model, make_input


def model_dtype(model) -> str | None:
    """The dtype name of a model's first floating parameter (None when it has none)."""
    for p in getattr(model, "parameters", lambda: [])():
        if p.is_floating_point():
            return str(p.dtype).replace("torch.", "")
    return None
