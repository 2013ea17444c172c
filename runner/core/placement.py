"""Where a process may run: its GPUs and its CPUs, as `worker --gpu/--cpus` pinned it.

Stdlib only: every point records its placement (details["host"]), and the worker applies
it before torch is imported, so torch's thread pool is sized to the CPU set it was given.
"""

from __future__ import annotations

import os

MAX_CPU = 65535  # far above any host's CPU count: a typo, not a big machine


class PlacementError(ValueError):
    """A bad CPU list or GPU index: one line naming the value."""


def parse_cpus(text: str) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8] (the list format taskset and nvidia-smi topo print)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise PlacementError(f"CPU list {text!r}: {part.strip()!r} is not N or N-M")
        a, b = int(lo), int(hi) if sep else int(lo)
        if a > b or b > MAX_CPU:
            raise PlacementError(f"CPU list {text!r}: {part.strip()!r} is not a range "
                                 f"within 0..{MAX_CPU}")
        cpus.update(range(a, b + 1))
    return sorted(cpus)


def format_cpus(cpus) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    out: list[str] = []
    run: list[int] = []
    for c in [*sorted(set(cpus)), None]:
        if run and c is not None and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c] if c is not None else []
    return ",".join(out)


def pin_cpus(cpus: list[int]) -> None:
    """Pin this process (and the threads it starts later) to `cpus`."""
    if not hasattr(os, "sched_setaffinity"):
        raise PlacementError("pinning CPUs needs Linux (os.sched_setaffinity)")
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        raise PlacementError(f"cannot pin to CPUs {format_cpus(cpus)}: {e.strerror}") from None


def placement() -> dict:
    """GPUs (CUDA_VISIBLE_DEVICES; None = all) and CPUs (None where the platform cannot
    say) this process may use."""
    try:
        cpus = format_cpus(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = None
    return {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "cpus": cpus}
