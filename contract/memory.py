"""What a point costs in memory: every memory figure a page, report, CLI line or advice
shows of a mode reads it here, so its definition is one function (issue 45; issue 44
redefines the cost, and changes this module only).

Two figures, named apart so neither is taken for the other:
    memory cost   what a mode's point costs, the figure a run is quoted by (headline,
                  Runs board, Compare, Trends, `runner list`, the reports, the Points
                  view's pivot): today the private pool its CUDA graphs keep reserved
                  after capture (graph_pool_bytes). Not pool + peak over eager's peak:
                  that difference read "+1 MiB" for a reduce-overhead holding a 34 MiB
                  pool, since its activations move from eager's peak into the pool. The
                  pool is what stays out of reach of everything else while the graphs live.
    memory held   the Memory view's stacked bars: graph pool + peak allocated, and its
                  extra over eager's at the same batch size (the trade-off chart's axis).
                  An upper bound: tensors that live in the pool while the peak is taken
                  count in both parts. It never understates what a mode holds.

Standard library only (the contract): the pages, the CLI and the reports share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contract.measurement import Measurement
from contract.metrics import METRICS
from contract.vocab import BASELINE_MODE, MODE_TABLE

MEMORY_COST_LABEL = "graph pool kept after capture"


def captures_graph(mode: str) -> bool:
    entry = MODE_TABLE.get(mode)
    return bool(entry and entry.graph)


def memory_cost(m: Measurement) -> int | None:
    """The point's memory cost in bytes (MEMORY_COST_LABEL): None where it is unknown,
    and for a mode that captures no graph (it keeps no graph pool)."""
    if not captures_graph(m.mode):
        return None
    pool = m.memory.graph_pool_bytes
    return None if pool is None else int(pool)


def mib_text(n_bytes: float) -> str:
    """A byte count as every memory figure of a summary reads: '34.0 MiB'."""
    metric = METRICS["graph_pool_bytes"]
    return f"{metric.fmt.format(n_bytes * metric.scale)} {metric.unit}"


def cost_text(m: Measurement) -> str:
    """The memory cost in words, its definition named: '34.0 MiB graph pool kept after
    capture'; a mode that captures no graph says so."""
    if not captures_graph(m.mode):
        return f"no graph pool ({m.mode} captures no graph)"
    cost = memory_cost(m)
    if cost is None:
        return f"{MEMORY_COST_LABEL}: not measured"
    return f"{mib_text(cost)} {MEMORY_COST_LABEL}"


@dataclass(frozen=True)
class Held:
    """What a point holds (bytes): its graph pool and its peak allocated, their total,
    and the total's extra over eager's at the same batch size (None without eager's)."""
    mode: str
    batch_size: int
    pool_bytes: float
    peak_bytes: float | None
    extra_bytes: float | None = None

    @property
    def total_bytes(self) -> float | None:
        return None if self.peak_bytes is None else self.pool_bytes + self.peak_bytes


def _held(m: Measurement) -> Held | None:
    """A point's two parts; None where neither was measured. A missing graph pool counts
    as 0 only for a mode that captures no graph, and only beside a known peak."""
    pool, peak = m.memory.graph_pool_bytes, m.memory.peak_allocated_bytes
    if pool is None and (captures_graph(m.mode) or peak is None):
        return None
    return Held(m.mode, m.batch_size, float(pool or 0),
                None if peak is None else float(peak))


def held(points: Iterable[Measurement]) -> list[Held]:
    """Each point (of one run) with its memory held and the extra over eager's at its
    batch size; points without both parts are left out."""
    found = [h for h in map(_held, points) if h is not None and h.total_bytes is not None]
    eager = {h.batch_size: h.total_bytes for h in found if h.mode == BASELINE_MODE}
    out = []
    for h in found:
        base = eager.get(h.batch_size)
        extra = None if base is None or h.total_bytes is None else h.total_bytes - base
        out.append(Held(h.mode, h.batch_size, h.pool_bytes, h.peak_bytes, extra))
    return out


def pareto(points: Sequence[tuple[str, int, float | None, float | None]]
           ) -> set[tuple[str, int]]:
    """(mode, batch) of the points no other mode at the same batch beats on both speed
    and memory: speedup >= and extra memory <=, one of them strictly better. `points`:
    (mode, batch, speedup, extra bytes); one without both figures is never best."""
    known = [(m, b, x, e) for m, b, x, e in points if x is not None and e is not None]
    best = set()
    for mode, batch, x, extra in known:
        beaten = any(ob == batch and om != mode and ox >= x and oe <= extra
                     and (ox > x or oe < extra) for om, ob, ox, oe in known)
        if not beaten:
            best.add((mode, batch))
    return best


__all__ = ["MEMORY_COST_LABEL", "Held", "captures_graph", "cost_text", "held",
           "memory_cost", "mib_text", "pareto"]
