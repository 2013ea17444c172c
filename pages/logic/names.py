"""How a run's device is named on every page, legend, picker and header.

A run without a GPU has gpu_name null, which pandas hands back as NaN: a float that is
truthy, so `gpu_name or "cpu"` printed "nan". One function names the device instead.
"""

from __future__ import annotations

from typing import Any

from runner.format.numbers import is_missing


def known(v: Any) -> str | None:
    """A text field as text, None when missing (None, NaN, empty)."""
    if is_missing(v):
        return None
    s = str(v).strip()
    return s or None


def device_name(header: Any) -> str:
    """'NVIDIA H200' for a GPU run; 'CPU (hostname)' (or 'CPU') for a run without one.
    `header` is a dict, a pandas row or a namedtuple-like object with those fields."""
    get = header.get if hasattr(header, "get") else (lambda k: getattr(header, k, None))
    gpu = known(get("gpu_name"))
    if gpu:
        return gpu
    host = known(get("hostname"))
    return f"CPU ({host})" if host else "CPU"
