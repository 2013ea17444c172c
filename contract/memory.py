"""What a mode costs in memory: one figure, its parts beside it (issue 44). Every memory
figure a page, report, CLI line, export or piece of advice shows of a sweep's point reads
it here.

The memory cost of a mode at a batch size is what running it keeps on the GPU beyond
what eager keeps at the same batch size, each measured alone from a clean state
(`memory_cost_bytes`, bundle version 7; docs/MEASUREMENT.md, "Memory"). Its parts:

    graph pool     what the mode's CUDA graphs keep reserved in their private pools
    default pool   the rest of what the mode keeps (static inputs and outputs,
                   workspaces, compiled code's buffers)
    eager's own    what eager keeps: the baseline the cost is taken from

so cost = graph pool + default pool - eager's own. A part is never shown as the whole:
34 MiB of graph pool is part of reduce-overhead's +4 MiB when eager keeps 32 MiB of its
own. The peak allocated during a step is another figure, transient, named as such.

A point stored before version 7 has no cost: its figures were read around each mode's
setup while the modes before it were alive, and may include an earlier mode's pool. Its
graph pool is shown as what it is, a part, with OLD_METHOD beside it.

Standard library only (the contract): the pages, the CLI and the reports share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contract.measurement import Measurement
from contract.metrics import METRICS
from contract.vocab import BASELINE_MODE, MODE_TABLE

MEMORY_COST_LABEL = "memory cost over eager"
OLD_METHOD = "measured before the isolated memory pass: may include an earlier mode's pool"
PEAK_LABEL = "peak during a step"


def captures_graph(mode: str) -> bool:
    entry = MODE_TABLE.get(mode)
    return bool(entry and entry.graph)


@dataclass(frozen=True)
class Cost:
    """One point's memory: the cost and its parts (bytes; None where unknown). `old`: a
    point from before the isolated pass, which has no cost and whose parts may include
    an earlier mode's pool."""
    mode: str
    batch_size: int
    cost_bytes: int | None
    kept_bytes: int | None
    pool_bytes: int | None
    eager_bytes: int | None
    peak_bytes: int | None
    old: bool

    @property
    def default_bytes(self) -> int | None:
        """The default pool's part: what the mode keeps outside its graphs' pools."""
        if self.kept_bytes is None or self.pool_bytes is None:
            return None
        return self.kept_bytes - self.pool_bytes


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def cost_of(m: Measurement) -> Cost | None:
    """The point's memory record; None where no memory figure was measured (a CPU run, a
    failed point, a published figure without memory)."""
    mem = m.memory
    cost, pool = _int(mem.memory_cost_bytes), _int(mem.graph_pool_bytes)
    peak = _int(mem.peak_allocated_bytes)
    if cost is None and pool is None and peak is None:
        return None
    if cost is None:
        return Cost(m.mode, m.batch_size, None, None, pool, None, peak, old=True)
    return Cost(m.mode, m.batch_size, cost, _int(mem.reserved_delta_bytes), pool,
                _int(mem.eager_reserved_delta_bytes), peak, old=False)


def memory_cost(m: Measurement) -> int | None:
    """The point's memory cost in bytes (MEMORY_COST_LABEL); None where it was not
    measured (before version 7, or no memory figures at all)."""
    return _int(m.memory.memory_cost_bytes)


def mib_text(n_bytes: float, signed: bool = False) -> str:
    """A byte count as every memory figure reads: '34.0 MiB', signed '+4.0 MiB'."""
    metric = METRICS["graph_pool_bytes"]
    mib = n_bytes * metric.scale
    return f"{mib:+,.1f} {metric.unit}" if signed else f"{mib:,.1f} {metric.unit}"


def parts_text(c: Cost) -> str:
    """The parts in words: 'keeps 36.0 MiB: graph pool 34.0 MiB, default pool 2.0 MiB;
    eager keeps 32.0 MiB'."""
    if c.kept_bytes is None:
        return ""
    out = f"keeps {mib_text(c.kept_bytes)}"
    if c.pool_bytes and c.default_bytes is not None:
        out += (f": graph pool {mib_text(c.pool_bytes)}, default pool "
                f"{mib_text(c.default_bytes)}")
    if c.mode != BASELINE_MODE and c.eager_bytes is not None:
        out += f"; eager keeps {mib_text(c.eager_bytes)}"
    return out


def cost_text(m: Measurement, short: bool = False, parts: bool = True) -> str:
    """The memory cost in words, its definition named and its parts beside it:
    '+4.0 MiB memory cost over eager (keeps 36.0 MiB: graph pool 34.0 MiB, default pool
    2.0 MiB; eager keeps 32.0 MiB)'. `parts=False`: the figure and its name alone, for a
    one-line answer (headline, board, Compare, CLI list, reports), where the parts would
    push the charts below the fold: the Memory view and the Points view show them.
    `short`: the figure and the graph pool only, for a narrow cell: '+4.0 MiB (graph pool
    34.0 MiB)'. Eager is the baseline; a point from before the isolated pass shows its
    graph pool as a part, marked."""
    c = cost_of(m)
    if c is None:
        return "memory not measured"
    if c.old:
        if c.pool_bytes is None or not captures_graph(c.mode):
            return f"memory {OLD_METHOD}" if not short else "memory: before the pass"
        pool = f"graph pool {mib_text(c.pool_bytes)}"
        return f"{pool} (before the memory pass)" if short else f"{pool} ({OLD_METHOD})"
    assert c.cost_bytes is not None  # a Cost that is not old has one
    if c.mode == BASELINE_MODE:
        kept = mib_text(c.kept_bytes or 0)
        return f"baseline (keeps {kept})" if short else f"the baseline: eager keeps {kept}"
    figure = f"{mib_text(c.cost_bytes, signed=True)}"
    if short:
        pool_part = c.pool_bytes if captures_graph(c.mode) else None
        return (f"{figure} (graph pool {mib_text(pool_part)})" if pool_part is not None
                else figure)
    cause = ""
    if c.cost_bytes < 0:
        cause = ": it keeps less than eager's own"
    listed = parts_text(c) if parts else ""
    return f"{figure} {MEMORY_COST_LABEL}{cause}" + (f" ({listed})" if listed else "")


def costs(points: Iterable[Measurement]) -> list[Cost]:
    """Each point's memory record (of one run), where it has one."""
    return [c for c in map(cost_of, points) if c is not None]


def pareto(points: Sequence[tuple[str, int, float | None, float | None]]
           ) -> set[tuple[str, int]]:
    """(mode, batch) of the points no other mode at the same batch beats on both speed
    and memory: speedup >= and memory cost <=, one of them strictly better. `points`:
    (mode, batch, speedup, cost bytes); one without both figures is never best."""
    known = [(m, b, x, e) for m, b, x, e in points if x is not None and e is not None]
    best = set()
    for mode, batch, x, cost in known:
        beaten = any(ob == batch and om != mode and ox >= x and oe <= cost
                     and (ox > x or oe < cost) for om, ob, ox, oe in known)
        if not beaten:
            best.add((mode, batch))
    return best


__all__ = ["MEMORY_COST_LABEL", "OLD_METHOD", "PEAK_LABEL", "Cost", "captures_graph",
           "cost_of", "cost_text", "costs", "memory_cost", "mib_text", "pareto",
           "parts_text"]
