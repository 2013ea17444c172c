"""Workers by host: which live workers share a host (hostname + per-host slot), for the
`workers` listing and the Launch page ("4 workers on host X")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract.queue import Worker
from contract.vocab import HOST_POLICIES

FIELDS: dict[str, type[Any]] = {"host_slot": int, "host_policy": str,
                                "cuda_visible_devices": str, "cpus": str}
_LIMITS = {"cuda_visible_devices": 200, "cpus": 1000}


def check_fields(host: Mapping[str, Any]) -> dict[str, int | str | None]:
    """The worker-table host fields, checked: a wrong one is a bug in the caller. `host`
    is register_worker's keyword arguments: the columns to write, by name."""
    unknown = set(host) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown worker fields: {', '.join(sorted(unknown))}")
    out: dict[str, int | str | None] = {}
    for key, value in host.items():
        if value is not None and not isinstance(value, FIELDS[key]):
            raise TypeError(f"worker field {key} {value!r} is not a {FIELDS[key].__name__}")
        if key == "host_slot" and value is not None and not 0 <= value < 1_000_000:
            raise ValueError(f"host_slot {value} must be from 0 to 999999")
        if key == "host_policy" and value is not None and value not in HOST_POLICIES:
            raise ValueError(f"host_policy {value!r} must be one of {HOST_POLICIES}")
        if key in _LIMITS and value is not None and len(value) > _LIMITS[key]:
            raise ValueError(f"{key} {value[:40]!r}... is over {_LIMITS[key]} characters")
        out[key] = value
    return out


def by_host(workers: list[Worker]) -> dict[str, list[Worker]]:
    """hostname -> its workers, hosts by name, each host's workers by slot then id."""
    out: dict[str, list[Worker]] = {}
    for w in workers:
        out.setdefault(w.hostname or "?", []).append(w)
    return {h: sorted(ws, key=lambda w: (w.host_slot is None, w.host_slot or 0, w.id))
            for h, ws in sorted(out.items())}


def describe(host: str, workers: list[Worker]) -> str:
    """'4 workers on host X (timing: exclusive)': the one line a host gets."""
    policies = sorted({w.host_policy or "unknown" for w in workers})
    n = len(workers)
    return (f"{n} worker{'s' if n != 1 else ''} on host {host} "
            f"(timing: {', '.join(policies)})")


def mixed_policies(workers: list[Worker]) -> list[str]:
    """The policies of one host's workers when they differ: an `exclusive` worker's lock
    does not keep a `shared` neighbour from timing beside it."""
    policies = sorted({w.host_policy for w in workers if w.host_policy})
    return policies if len(policies) > 1 else []
