"""One run in a few figures: its header, each mode's best speedup over eager, the key figure
(the one the run is quoted by), what it costs in memory, its energy gain and the
break-even batch. Built once, by summarize(), from the run's points as typed Measurement
records; every reader quotes the figures through this class's text methods: the Run page
headline, the Runs board, Compare, Trends, `runner list` and both HTML reports.

Why one builder: the header and the key figures were a dict built in three places and
read in three shapes, and the same run's memory cost read "+1 MiB" in the headline (pool
+ peak over eager's peak) and 34 MiB on the board (the graph pool). Here the memory cost
has one definition, named by MEMORY_COST_LABEL wherever it is shown.

The rules are the dashboard's (pages/logic/analysis.py states them for frames):
    speedup     the stored median of the per-round paired ratio eager / mode, with its 95%
                interval; else eager's step time / the mode's (no interval), eager at the
                same batch or the point's own published reference
    best        per mode, the point whose interval's lower bound is highest (a point
                without an interval ranks by its median); inconclusive points are never
                ranked (contract/verdict.py), and a mode with nothing else is quoted
                by its narrowest interval, as inconclusive
    key figure  the best of the modes' bests by the same rank, inconclusive ones left out
    break-even  the first batch of the tail of batches where reduce-overhead gains less
                than BREAK_EVEN_GAIN over compile

Standard library only (no torch, no pandas, no SQL): db/queries.py reads the rows and
calls summarize(); pages/ call it on a frame's rows through records().
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from contract import verdict as vd
from contract.measurement import Measurement
from contract.metrics import METRICS
from contract.numbers import number_or_none
from contract.run_record import ENVIRONMENT_FIELDS, Environment
from contract.vocab import ALTERNATIVE_MODES, BASELINE_MODE, MODE_TABLE

# The memory a mode's best point costs, in one definition: the private pool its CUDA
# graphs keep reserved after capture (graph_pool_bytes). Not pool + peak over eager's
# peak (the Memory view's tradeoff chart, "Extra memory over eager"): that difference
# read "+1 MiB" for a reduce-overhead holding a 34 MiB pool, since its activations move
# from eager's peak into the pool. The pool is what stays out of reach of everything
# else for as long as the graphs live.
MEMORY_COST_LABEL = "graph pool kept after capture"
# Where reduce-overhead stops paying for its constraints (static shapes, a private pool).
BREAK_EVEN_GAIN = 1.1
# Break-even is reduce-overhead's gain over compile, not over eager (the speedups are over
# eager): every place that quotes it names its reference by this label, since one line
# quoting it against compile beside another quoting eager read as two figures.
BREAK_EVEN_MODE, BREAK_EVEN_REFERENCE = "reduce-overhead", "compile"
BREAK_EVEN_LABEL = f"break-even vs {BREAK_EVEN_REFERENCE}"
NO_SPEEDUP = "no speedup measured"  # no mode has an ok point beside an ok eager one

# What summarize reads of a point: the columns db/queries.py selects for it, and the
# details keys it needs (a point's details hold ~40 keys; the others are not read).
SUMMARY_COLUMNS = ("mode", "batch_size", "status", "step_ms", "speedup", "speedup_ci_low",
                   "speedup_ci_high", "graph_pool_bytes", "energy_gain", "energy_gain_ci_low",
                   "energy_gain_ci_high", "details")
SUMMARY_DETAILS = ("eager_reference_ms", "vs_compile")


@dataclass(frozen=True)
class RunHeader:
    """What tells runs apart: who measured what, where, when; as readers get it back
    from the database (db/queries.py run_header, or a frame's row through header_of):
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


def header_of(row: Mapping[str, Any]) -> RunHeader:
    """A run header from a mapping holding its fields (a frame's row: NaN reads as
    unknown; keys it does not know are ignored)."""
    def known(v: Any) -> Any:  # NaN and pandas' NaT (never equal to themselves): unknown
        return None if v is not None and not isinstance(v, (dict, list)) and v != v else v

    return RunHeader(**{f.name: known(row.get(f.name)) for f in fields(RunHeader)})


def mib_text(n_bytes: float) -> str:
    """A byte count as every memory figure of a summary reads: '34.0 MiB'."""
    m = METRICS["graph_pool_bytes"]
    return f"{m.fmt.format(n_bytes * m.scale)} {m.unit}"


def less_energy(gain: float) -> str:
    """An energy gain over eager (eager's energy per step over the mode's) in words."""
    change = 1 - 1 / gain
    if round(abs(change) * 100) == 0:
        return "the same energy per step"
    return f"{abs(change):.0%} {'less' if change > 0 else 'more'} energy per step"


@dataclass(frozen=True)
class ModeBest:
    """One mode's best speedup over eager and what that point costs."""
    mode: str
    batch_size: int
    speedup: float
    ci_low: float | None
    ci_high: float | None
    verdict: str  # contract/verdict.py's
    step_ms: float
    eager_ms: float | None
    ties: tuple[int, ...] = ()  # batch sizes within noise of the best (itself included)
    inconclusive: tuple[int, ...] = ()  # batch sizes left out of the ranking
    graph_pool_bytes: float | None = None  # unknown: None, never 0
    energy_gain: float | None = None
    energy_gain_ci_low: float | None = None
    energy_gain_ci_high: float | None = None

    @property
    def rank(self) -> float:
        return self.ci_low if self.ci_low is not None else self.speedup

    def speedup_text(self) -> str:
        """The speedup as the one rule quotes it: '6.80x (6.05-7.57x)'."""
        return vd.quoted(self.speedup, self.ci_low, self.ci_high)

    def memory_text(self) -> str:
        """What the point costs in memory, its definition named: '34.0 MiB graph pool kept
        after capture'; a mode that captures no graph says so."""
        if not MODE_TABLE[self.mode].graph:
            return f"no graph pool ({self.mode} captures no graph)"
        if self.graph_pool_bytes is None:
            return f"{MEMORY_COST_LABEL}: not measured"
        return f"{mib_text(self.graph_pool_bytes)} {MEMORY_COST_LABEL}"

    def energy_text(self) -> str | None:
        """'84% less energy per step'; 'energy gain inconclusive (95% 0.00-19.85x)' where
        the one rule (verdict.py) says so; None without a positive energy gain."""
        if self.energy_gain is None or self.energy_gain <= 0:
            return None
        if vd.inconclusive(self.energy_gain, self.energy_gain_ci_low,
                           self.energy_gain_ci_high):
            return ("energy gain inconclusive (95% "
                    f"{vd.interval_text(self.energy_gain_ci_low, self.energy_gain_ci_high)})")
        return less_energy(self.energy_gain)


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
        found = [b for b in self.bests if b.verdict != vd.INCONCLUSIVE]
        return max(found, key=lambda b: b.rank) if found else None

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
        parts = [self.speedup_text(), k.memory_text(), k.energy_text()]
        # A best that is no faster than eager says so: the line is read as the answer.
        parts.append({vd.SAME: "within noise of eager",
                      vd.SLOWER: "slower than eager"}.get(k.verdict))
        return " · ".join(p for p in parts if p)


def _num(v: Any) -> float | None:
    return number_or_none(v)


def record(row: Mapping[str, Any]) -> Measurement:
    """A stored point (a database row or a frame's row: NaN reads as unknown) as the
    Measurement summarize() reads: SUMMARY_COLUMNS and the SUMMARY_DETAILS keys only."""
    m = Measurement(mode=row["mode"], batch_size=int(row["batch_size"]),
                    status=row.get("status") or "ok")
    m.timing.step_ms = _num(row.get("step_ms"))
    m.intervals.speedup = _num(row.get("speedup"))
    m.intervals.speedup_ci_low = _num(row.get("speedup_ci_low"))
    m.intervals.speedup_ci_high = _num(row.get("speedup_ci_high"))
    m.memory.graph_pool_bytes = _num(row.get("graph_pool_bytes"))
    m.energy.energy_gain = _num(row.get("energy_gain"))
    m.energy.energy_gain_ci_low = _num(row.get("energy_gain_ci_low"))
    m.energy.energy_gain_ci_high = _num(row.get("energy_gain_ci_high"))
    details = row.get("details")
    if isinstance(details, Mapping):
        m.set_details({k: details[k] for k in SUMMARY_DETAILS if k in details})
    return m


def records(rows: Iterable[Mapping[str, Any]]) -> list[Measurement]:
    return [record(r) for r in rows]


@dataclass(frozen=True)
class _Point:
    m: Measurement
    speedup: float
    ci_low: float | None
    ci_high: float | None
    eager_ms: float | None
    verdict: str


def _usable(points: Iterable[Measurement]) -> list[Measurement]:
    """Points with a real step time: ok, and step_ms known and positive."""
    return [p for p in points if p.status == "ok" and (p.timing.step_ms or 0) > 0]


def _speedups(ok: Sequence[Measurement]) -> list[_Point]:
    eager = {p.batch_size: p.timing.step_ms for p in ok if p.mode == BASELINE_MODE}
    out = []
    for p in ok:
        if p.mode == BASELINE_MODE:
            continue
        ref = _num(p.source.eager_reference_ms)
        eager_ms = ref if ref is not None else eager.get(p.batch_size)
        stored = _num(p.intervals.speedup)
        if stored is not None:
            lo, hi = _num(p.intervals.speedup_ci_low), _num(p.intervals.speedup_ci_high)
            value = stored
        elif eager_ms is not None:
            lo = hi = None  # a paired interval belongs to the stored median only
            value = eager_ms / p.timing.step_ms
        else:
            continue
        out.append(_Point(p, value, lo, hi, eager_ms, vd.verdict(value, lo, hi)))
    return out


def _spread(x: _Point) -> float:
    if x.ci_low is None or x.ci_high is None or x.ci_low <= 0:
        return math.inf
    return x.ci_high / x.ci_low


def _mode_best(points: list[_Point]) -> ModeBest:
    points = sorted(points, key=lambda x: x.m.batch_size)
    left_out = tuple(x.m.batch_size for x in points if x.verdict == vd.INCONCLUSIVE)
    ranked = [x for x in points if x.verdict in vd.RANKABLE]
    if ranked:
        # max() keeps the first of equal ranks: the smallest batch.
        best = max(ranked, key=lambda x: x.ci_low if x.ci_low is not None else x.speedup)
        ties = {x.m.batch_size for x in ranked if x.ci_low is not None
                and x.ci_high is not None and x.ci_low <= best.speedup <= x.ci_high}
        ties = tuple(sorted(ties | {best.m.batch_size}))
    else:  # nothing to rank: the narrowest interval stands for the mode, as inconclusive
        best, ties = min(points, key=_spread), ()
    m = best.m
    return ModeBest(mode=m.mode, batch_size=m.batch_size, speedup=best.speedup,
                    ci_low=best.ci_low, ci_high=best.ci_high, verdict=best.verdict,
                    step_ms=m.timing.step_ms, eager_ms=best.eager_ms, ties=ties,
                    inconclusive=left_out, graph_pool_bytes=m.memory.graph_pool_bytes,
                    energy_gain=_num(m.energy.energy_gain),
                    energy_gain_ci_low=_num(m.energy.energy_gain_ci_low),
                    energy_gain_ci_high=_num(m.energy.energy_gain_ci_high))


def break_even_ratios(ok: Sequence[Measurement]) -> tuple[tuple[int, float], ...]:
    """(batch, reduce-overhead's gain over compile) where both were measured: the paired
    per-round ratio where the runner stored it, else the ratio of medians."""
    compile_ms = {p.batch_size: p.timing.step_ms for p in ok
                  if p.mode == BREAK_EVEN_REFERENCE}
    out = []
    for p in sorted(ok, key=lambda p: p.batch_size):
        if p.mode != BREAK_EVEN_MODE or p.batch_size not in compile_ms:
            continue
        vs = p.intervals.vs_compile
        paired = _num(vs.median) if vs is not None else None
        out.append((p.batch_size, paired if paired is not None
                    else compile_ms[p.batch_size] / p.timing.step_ms))
    return tuple(out)


def first_below(ratios: Sequence[tuple[int, float]],
                threshold: float = BREAK_EVEN_GAIN) -> int | None:
    """The first batch of the tail of batches below `threshold`, scanning from the
    largest down: one noisy batch in the middle does not move it. None when the largest
    batch still gains."""
    found = None
    for b, ratio in reversed(ratios):
        if ratio >= threshold:
            break
        found = b
    return found


def summarize(header: RunHeader, points: Iterable[Measurement]) -> RunSummary:
    """The run's summary from its stored points (any order; failed points are ignored)."""
    ok = _usable(points)
    by_mode: dict[str, list[_Point]] = {}
    for x in _speedups(ok):
        by_mode.setdefault(x.m.mode, []).append(x)
    bests = tuple(_mode_best(by_mode[m]) for m in ALTERNATIVE_MODES if m in by_mode)
    return RunSummary(header, bests, first_below(break_even_ratios(ok)))


__all__ = ["BREAK_EVEN_GAIN", "BREAK_EVEN_LABEL", "BREAK_EVEN_MODE", "BREAK_EVEN_REFERENCE",
           "MEMORY_COST_LABEL", "ModeBest", "RunHeader", "RunSummary",
           "SUMMARY_COLUMNS", "header_of", "less_energy", "mib_text", "record", "records",
           "summarize"]
