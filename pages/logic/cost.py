"""What a mode costs in memory beside what it buys, for the Memory view (the figures
are contract/memory.py's: the one place a point's memory is defined): each point's
memory cost over eager with its parts, its speedup and whether it is Pareto-best, and
why a run has none to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contract import memory
from contract.measurement import Measurement
from contract.speedups import Speedup, mode_order, speedups, usable
from contract.vocab import CUDA_GRAPH_MODES, MODE_TABLE

# The parts of what a mode keeps, as the Memory view stacks them (docs/MEASUREMENT.md,
# "Memory"); before the isolated pass only the graph pool was known.
PARTS = {"pool": "Graph pool", "default": "Default pool"}


@dataclass(frozen=True)
class Cost:
    """One point's memory (contract/memory.py Cost), its speedup over eager (None: none)
    and whether no other mode at its batch is at least as fast for at most as much."""
    memory: memory.Cost
    speedup: Speedup | None
    pareto: bool

    @property
    def mode(self) -> str:
        return self.memory.mode

    @property
    def batch_size(self) -> int:
        return self.memory.batch_size


def costs(points: Sequence[Measurement]) -> list[Cost]:
    """One run's points with a memory figure, in mode order."""
    ok = usable(points)
    found = {(s.mode, s.batch_size): s for s in speedups(ok)}
    records = memory.costs(ok)
    best = memory.pareto([(c.mode, c.batch_size,
                           s.speedup if (s := found.get((c.mode, c.batch_size))) else None,
                           c.cost_bytes) for c in records])
    rank = {m: i for i, m in enumerate(MODE_TABLE)}
    return [Cost(c, found.get((c.mode, c.batch_size)), (c.mode, c.batch_size) in best)
            for c in sorted(records, key=lambda c: (rank.get(c.mode, len(rank)),
                                                    c.batch_size))]


def old_method(costs: Sequence[Cost]) -> bool:
    """Whether the run's memory is from before the isolated pass (no cost, pools only)."""
    return bool(costs) and all(c.memory.old for c in costs)


def missing_reason(points: Sequence[Measurement], device: str | None) -> str:
    """Why a run's Memory view has no chart, in one line. Memory is read from the CUDA
    allocator, so a CPU run (`device`, the run's environment's) has none to show: a blank
    view left the reader guessing (issue 37)."""
    if device == "cpu":
        refused = sorted({m.mode for m in points
                          if m.mode in CUDA_GRAPH_MODES and m.status == "unsupported"})
        said = (f" ({' and '.join(refused)} recorded as unsupported here)" if refused
                else "")
        return ("No memory figures: this run had no CUDA. Memory is read from the CUDA "
                "allocator (the graph pool kept after capture, the peak allocated); on a "
                "CPU there is no graph pool, and the graph modes are unsupported"
                f"{said}.")
    if not any(m.status == "ok" for m in points):
        return "No memory figures: no point of this run ended ok (see Points)."
    if not usable(points):  # ok, yet without a step: published per-kernel figures
        return ("No memory figures: its points have no step measured here (published "
                "figures that give none).")
    return ("No memory figures: its points recorded none (a run from before memory was "
            "measured, or a published figure without it).")


__all__ = ["PARTS", "Cost", "costs", "missing_reason", "mode_order"]
