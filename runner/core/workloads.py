"""Workloads: the models a sweep measures, built from the catalog's names
(contract/catalog.py holds the names and parameters).

Torch-free at import; torch is imported inside the build functions only.

A workload's model may define `prepare_batch(batch_size)`: the runner calls it once per
point before anything is compiled or captured. It sizes static state (a KV cache) as
buffers, so compiled modes see fixed addresses and nothing is mutated inside a step.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contract.catalog import (  # noqa: F401 - the catalog, re-exported for callers
    WORKLOADS,
    ParamSpec,
    WorkloadError,
    WorkloadInfo,
    check_workload,
)


@dataclass(frozen=True)
class Workload:
    """A resolved workload: typed parameters with defaults filled in, ready to build."""

    name: str
    params: Mapping[str, Any]  # typed, defaults filled in; read only
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

    from runner.core.decoder import Decoder

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


# --- kernel-chain: tiny dependent elementwise kernels (runner/core/chain.py) --------------

def _build_chain(w: Workload, device: str):
    import torch

    from runner.core.chain import build_module

    dtype = _torch_dtype(w.params["dtype"])
    model = build_module(w.params["kernels"]).to(device).eval()

    def make_input(batch_size: int, generator=None):
        x = torch.randn(batch_size, generator=generator, dtype=torch.float32)
        return x.to(device=device, dtype=dtype)

    return model, make_input


# --- train-step: forward, loss, backward, optimizer step (runner/core/training.py) -------

def _build_train(w: Workload, device: str):
    from runner.core.training import build_task

    return build_task(w.params, _torch_dtype(w.params["dtype"]), device)


# --- hf-causal-lm and timm: the models people run (optional packages, imported lazily) --

def _build_hf(w: Workload, device: str):
    from runner.core import hf_models

    return hf_models.build(w.params, _torch_dtype(w.params["dtype"]), device)


def _build_timm(w: Workload, device: str):
    from runner.core import timm_models

    return timm_models.build(w.params, _torch_dtype(w.params["dtype"]), device)


def _check_hf(params: Mapping[str, Any], allow_import: bool) -> None:
    from runner.core import hf_models

    hf_models.check(params, trusted=allow_import)


def _check_timm(params: Mapping[str, Any], allow_import: bool) -> None:
    from runner.core import timm_models

    timm_models.check(params)


_BUILDERS = {"mlp": _build_mlp, "transformer-decode": _build_decoder,
             "kernel-chain": _build_chain, "train-step": _build_train,
             "hf-causal-lm": _build_hf, "timm": _build_timm}
# What resolve() checks on this machine before anything is built: the optional package is
# there, the model exists. One WorkloadError line each.
_MACHINE_CHECKS = {"hf-causal-lm": _check_hf, "timm": _check_timm}

def resolve(name: str, params: dict[str, str] | None = None, *,
            allow_import: bool = True) -> Workload:
    """Validate a workload name and its raw parameters; return a buildable Workload."""
    name, typed = check_workload(name, params, allow_import=allow_import)
    if name in _MACHINE_CHECKS:
        _MACHINE_CHECKS[name](typed, allow_import)
    if name in _BUILDERS:
        return Workload(name, typed, typed["dtype"], _BUILDERS[name])
    return _resolve_factory(name, typed)


def _resolve_factory(name: str, params: Mapping[str, Any]) -> Workload:
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
