"""One run in a few figures: its header, each mode's best speedup over eager, the key figure
(the one the run is quoted by), what it costs in memory, its energy gain and the
break-even batch. Built once, by summarize(), from the run's points as typed Measurement
records; every reader quotes the figures through this class's text methods: the Run page
headline, the Runs board, Compare, Trends, `runner list` and both HTML reports.

Why one builder: the header and the key figures were a dict built in three places and
read in three shapes, and the same run's memory cost read "+1 MiB" in the headline (pool
+ peak over eager's peak) and 34 MiB on the board (the graph pool). Here the memory cost
has one definition (contract/memory.py: what a mode keeps beyond eager, issue 44), named
by MEMORY_COST_LABEL wherever it is shown, with its parts beside it.

The rules are speedups.py's (speedup, best, key figure, break-even) and memory.py's
(the memory cost), over typed records; this module only puts them together and words them.

Standard library only (no torch, no pandas, no SQL): db/queries.py reads the rows and
calls summarize().
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contract import speedups as sp
from contract import verdict as vd
from contract.measurement import Measurement
from contract.memory import MEMORY_COST_LABEL, mib_text
from contract.noise import NoiseCounts
from contract.numbers import number_or_none
from contract.run_record import ENVIRONMENT_FIELDS, Environment
from contract.speedups import (
    BREAK_EVEN_GAIN,
    BREAK_EVEN_LABEL,
    BREAK_EVEN_MODE,
    BREAK_EVEN_REFERENCE,
    ModeBest,
)

NO_SPEEDUP = "no speedup measured"  # no mode has an ok point beside an ok eager one

# What summarize reads of a point: the columns db/queries.py selects for it, and the
# details keys it needs (a point's details hold ~40 keys; the others are not read).
SUMMARY_COLUMNS = ("mode", "batch_size", "status", "step_ms", "speedup", "speedup_ci_low",
                   "speedup_ci_high", "graph_pool_bytes", "peak_allocated_bytes",
                   "reserved_delta_bytes", "memory_cost_bytes", "energy_gain",
                   "energy_gain_ci_low", "energy_gain_ci_high", "details")
SUMMARY_DETAILS = ("eager_reference_ms", "vs_compile", "eager_reserved_delta_bytes")


@dataclass(frozen=True)
class RunHeader:
    """What tells runs apart: who measured what, where, when; as readers get it back
    from the database (db/records.py header, the one converter from a row):
    the Run record's fields with the run's id and its status as shown, and the
    Environment's (run_record.py)."""
    id: int
    uuid: str
    workload: str
    status: str  # "lost" for a running run whose writer went silent (db/liveness.py)
    kind: str = "sweep"  # sweep, serve or graph-memory (contract/vocab.py RUN_KINDS)
    workload_params: Any = None  # the workload's parameters as stored (a JSON object)
    dtype: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None
    label: str | None = None
    source: str | None = None  # measured or published
    command: str | None = None  # the line that made it (offered again only if it parses)
    # the Environment's fields (run_record.py ENVIRONMENT_FIELDS), in its order
    device: str | None = None
    gpu_name: str | None = None
    gpu_count: int | None = None
    sm_count: int | None = None
    gpu_memory_bytes: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    torch_version: str | None = None
    triton_version: str | None = None
    python_version: str | None = None
    hostname: str | None = None  # what names a CPU run's device
    cpu_model: str | None = None

    def environment(self) -> Environment:
        return Environment(**{f: getattr(self, f) for f in ENVIRONMENT_FIELDS})

    @property
    def where(self) -> str:
        """The GPU, "cpu" for a CPU run, "unknown GPU" where neither was recorded."""
        return self.gpu_name or (self.device if self.device == "cpu" else "unknown GPU")


@dataclass(frozen=True)
class RunListing:
    """A run as the run lists show it (db/queries.py runs_list): its header, its point
    counts (all, ok, unsupported) and its noise counts (noise.py's, summed in SQL)."""
    header: RunHeader
    points: int = 0
    ok_points: int = 0
    unsupported_points: int = 0
    noise: NoiseCounts = NoiseCounts()


def less_energy(gain: float) -> str:
    """An energy gain over eager (eager's energy per step over the mode's) in words."""
    change = 1 - 1 / gain
    if round(abs(change) * 100) == 0:
        return "the same energy per step"
    return f"{abs(change):.0%} {'less' if change > 0 else 'more'} energy per step"


def energy_text(b: ModeBest) -> str | None:
    """A best point's energy gain over eager in words: '84% less energy per step';
    'energy gain inconclusive (95% 0.00-19.85x)' where the one rule (verdict.py) says
    so; None without a positive energy gain."""
    e = b.point.energy
    gain = number_or_none(e.energy_gain)
    if gain is None or gain <= 0:
        return None
    if vd.inconclusive(gain, e.energy_gain_ci_low, e.energy_gain_ci_high):
        return ("energy gain inconclusive (95% "
                f"{vd.interval_text(e.energy_gain_ci_low, e.energy_gain_ci_high)})")
    return less_energy(gain)


@dataclass(frozen=True)
class RunSummary:
    """A run's header and key figures. `bests`: one per mode with a speedup, in mode
    order; empty for serve and graph-memory runs and for a sweep without one."""
    header: RunHeader
    bests: tuple[ModeBest, ...] = ()
    break_even_batch: int | None = None  # None: not reached, or unknown

    @property
    def key(self) -> ModeBest | None:
        """The best the run can be quoted by: ranked by the interval's lower bound over
        every mode's best; never an inconclusive one."""
        return sp.key_best(self.bests)

    def best(self, mode: str) -> ModeBest | None:
        return next((b for b in self.bests if b.mode == mode), None)

    def speedup_text(self) -> str:
        """The key figure's speedup, mode and batch: 'reduce-overhead at batch 1: 6.80x
        (6.05-7.57x)'; why there is none where there is none."""
        k = self.key
        if k is not None:
            return f"{k.mode} at batch {k.batch_size}: {k.speedup_text()}"
        if not self.bests:
            return NO_SPEEDUP
        b = self.bests[0]
        return (f"inconclusive: no mode's speedup is a finding (e.g. {b.mode} at batch "
                f"{b.batch_size}: 95% {vd.interval_text(b.ci_low, b.ci_high)})")

    def memory_text(self) -> str | None:
        """The key figure's memory cost with its definition; None without a key figure."""
        return self.key.memory_text() if self.key is not None else None

    def headline(self) -> str | None:
        """The run's answer in one line: the key figure, its memory cost, its energy gain
        and, when the best is no faster than eager, that it is not. None without any
        speedup."""
        if not self.bests:
            return None
        k = self.key
        if k is None:
            return self.speedup_text()[0].upper() + self.speedup_text()[1:]
        parts = [self.speedup_text(), k.memory_text(), energy_text(k)]
        # A best that is no faster than eager says so: the line is read as the answer.
        parts.append({vd.SAME: "within noise of eager",
                      vd.SLOWER: "slower than eager"}.get(k.verdict))
        return " · ".join(p for p in parts if p)


def summarize(header: RunHeader, points: Iterable[Measurement]) -> RunSummary:
    """The run's summary from its stored points (any order; failed points are ignored)."""
    points = list(points)
    be = sp.break_even(points)
    below = be.batch_size if be.status in ("crosses", "always-below") else None
    return RunSummary(header, sp.mode_bests(sp.speedups(points)), below)


__all__ = ["BREAK_EVEN_GAIN", "BREAK_EVEN_LABEL", "BREAK_EVEN_MODE", "BREAK_EVEN_REFERENCE",
           "MEMORY_COST_LABEL", "NO_SPEEDUP", "ModeBest", "RunHeader", "RunListing", "RunSummary",
           "SUMMARY_COLUMNS", "energy_text", "less_energy", "mib_text", "summarize"]
