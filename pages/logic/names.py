"""How a run's device is named on every page, legend, picker and header.

A run without a GPU has gpu_name null, which pandas hands back as NaN: a float that is
truthy, so `gpu_name or "cpu"` printed "nan". One function names the device instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contract.numbers import is_missing
from contract.vocab import RUN_KIND_TABLE


def known(v: Any) -> str | None:
    """A text field as text, None when missing (None, NaN, empty)."""
    if is_missing(v):
        return None
    s = str(v).strip()
    return s or None


def _fields(header: Any) -> Callable[[str], Any]:
    """A field reader over `header`: a dict's or a pandas row's keys, else its attributes
    (a record, a namedtuple); None for a field it does not have."""
    return header.get if hasattr(header, "get") else (lambda k: getattr(header, k, None))


def device_name(header: Any) -> str:
    """'NVIDIA H200' for a GPU run; 'CPU (hostname)' (or 'CPU') for a run without one.
    `header` is a dict, a pandas row or a namedtuple-like object with those fields."""
    get = _fields(header)
    gpu = known(get("gpu_name"))
    if gpu:
        return gpu
    host = known(get("hostname"))
    return f"CPU ({host})" if host else "CPU"


KINDS = {k.name: k.noun for k in RUN_KIND_TABLE.values()}
LABEL_CHARS = 32  # a label's most in a picker (the full label is on the run)
LINE_CHARS = 120  # a picker's whole line, which fits 1280 px: long GPU names eat the label's


def run_choice(header: Any) -> str:
    """How a run is offered in a picker: by what tells runs apart, '#3 mlp sweep · NVIDIA
    H200 · torch 2.11.0+cu130 · 2026-12-03 13:48 · H200 mlp'. Device and torch alone read
    '#N NVIDIA H200 · torch 2.11' eight times over on Import/export (issue 37)."""
    get = _fields(header)
    kind = known(get("kind")) or "sweep"
    what = f"#{int(get('id'))} {known(get('workload')) or '?'} {KINDS.get(kind, kind)}"
    torch = known(get("torch_version"))
    parts = [what, device_name(header)] + ([f"torch {torch}"] if torch else [])
    created = get("created_at")
    if not is_missing(created):
        parts.append(f"{created:%Y-%m-%d %H:%M} UTC")  # every stored time is UTC
    suffix = " (published)" if get("source") == "published" else ""
    label = known(get("label"))
    room = min(LABEL_CHARS, LINE_CHARS - len(" · ".join(parts)) - len(" · ") - len(suffix))
    if label and room >= 4:  # under four characters a label tells nothing
        parts.append(picker_label(label, room))
    return " · ".join(parts) + suffix


def picker_label(label: str, room: int = LABEL_CHARS) -> str:
    """A run's label as a picker shows it: at most `room` characters, an ellipsis where
    it was cut (a published run's label is its citation, 100 characters and more)."""
    return label if len(label) <= room else label[:room - 1] + "…"


# Words a GPU's name carries besides its model: the vendor, the product line.
_VENDOR_WORDS = {"nvidia", "tesla", "geforce", "quadro", "amd", "radeon", "intel"}


def short_device(header: Any) -> str:
    """The device's model alone, for a column header: 'H100' for 'NVIDIA H100 80GB HBM3',
    'V100' for 'Tesla V100-SXM2-16GB', 'RTX 4090' for 'NVIDIA GeForce RTX 4090'; 'CPU' for
    a run without a GPU. The full name (device_name) is in the page's legend."""
    gpu = known(_fields(header)("gpu_name"))
    if not gpu:
        return "CPU"
    words = [w for w in gpu.split() if w.lower() not in _VENDOR_WORDS] or gpu.split()
    out = []
    for w in words:  # up to the first word with a digit: the model number
        out.append(w.split("-")[0] if any(ch.isdigit() for ch in w) else w)
        if any(ch.isdigit() for ch in w):
            break
    return " ".join(out)
