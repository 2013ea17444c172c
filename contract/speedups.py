"""The rules over a run's points, once, as typed records (issue 45): each point's speedup
over eager and its verdict, each mode's best, break-even and payback. The run summary
(run_summary.py), every page, the CLI and the reports read them here; nothing computes
them again over a frame.

    speedup     the stored median of the per-round paired ratio eager / mode, with its 95%
                interval; else eager's step time / the mode's (no interval), eager at the
                same batch or the point's own published reference
    best        per mode, the point whose interval's lower bound is highest (a point
                without an interval ranks by its median); inconclusive points are never
                ranked (verdict.py), and a mode with nothing else is quoted by its
                narrowest interval, as inconclusive
    break-even  the first batch of the tail of batches where reduce-overhead gains less
                than BREAK_EVEN_GAIN over compile
    payback     the steps a mode must run to repay its setup with its per-step saving

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contract import memory
from contract import verdict as vd
from contract.measurement import Measurement
from contract.numbers import number_or_none
from contract.vocab import ALTERNATIVE_MODES, BASELINE_MODE, MODES

# Where reduce-overhead stops paying for its constraints (static shapes, a private pool).
BREAK_EVEN_GAIN = 1.1
# Break-even is reduce-overhead's gain over compile, not over eager (the speedups are over
# eager): every place that quotes it names its reference by this label, since one line
# quoting it against compile beside another quoting eager read as two figures.
BREAK_EVEN_MODE, BREAK_EVEN_REFERENCE = "reduce-overhead", "compile"
BREAK_EVEN_LABEL = f"break-even vs {BREAK_EVEN_REFERENCE}"

_ORDER = {m: i for i, m in enumerate(MODES)}


def mode_order(m: Measurement) -> tuple[int, int]:
    """The order every table and chart lists points in: mode order, then batch size."""
    return _ORDER.get(m.mode, len(_ORDER)), m.batch_size


def in_mode_order(points: Iterable[Measurement]) -> list[Measurement]:
    return sorted(points, key=mode_order)


def usable(points: Iterable[Measurement]) -> list[Measurement]:
    """Points with a real step time: ok, and step_ms known and positive."""
    return [p for p in points if p.status == "ok"
            and (number_or_none(p.timing.step_ms) or 0) > 0]


@dataclass(frozen=True)
class Speedup:
    """One point's speedup over eager: the figure, its 95% interval (None: none), eager's
    step it is against, and its verdict (verdict.py; None for eager itself)."""
    point: Measurement
    speedup: float
    ci_low: float | None
    ci_high: float | None
    eager_ms: float | None
    verdict: str | None

    @property
    def mode(self) -> str:
        return self.point.mode

    @property
    def batch_size(self) -> int:
        return self.point.batch_size

    @property
    def step_ms(self) -> float:
        return float(self.point.timing.step_ms or 0.0)

    @property
    def rank(self) -> float:
        return self.ci_low if self.ci_low is not None else self.speedup


def speedups(points: Iterable[Measurement]) -> list[Speedup]:
    """Each usable point's speedup over eager (of one run), in mode order. Eager is in at
    1.0 with no verdict, so a table shows the baseline; a point without an ok eager point
    at its batch (nor a reference of its own) is left out."""
    ok = usable(points)
    eager = {p.batch_size: float(p.timing.step_ms or 0) for p in ok if p.mode == BASELINE_MODE}
    out = []
    for p in in_mode_order(ok):
        step = float(p.timing.step_ms or 0)
        ref = number_or_none(p.source.eager_reference_ms)
        eager_ms = ref if ref is not None else eager.get(p.batch_size)
        stored = number_or_none(p.intervals.speedup)
        lo = hi = None
        if stored is not None:
            lo = number_or_none(p.intervals.speedup_ci_low)
            hi = number_or_none(p.intervals.speedup_ci_high)
            value = stored
        elif eager_ms is not None:
            value = eager_ms / step  # a paired interval belongs to the stored median only
        else:
            continue
        judged = None if p.mode == BASELINE_MODE else vd.verdict(value, lo, hi)
        out.append(Speedup(p, value, lo, hi, eager_ms, judged))
    return out


@dataclass(frozen=True)
class ModeBest:
    """One mode's best speedup over eager and the point it is at."""
    best: Speedup
    ties: tuple[int, ...] = ()  # batch sizes within noise of the best (itself included)
    inconclusive: tuple[int, ...] = ()  # batch sizes left out of the ranking

    @property
    def mode(self) -> str:
        return self.best.mode

    @property
    def point(self) -> Measurement:
        return self.best.point

    @property
    def batch_size(self) -> int:
        return self.best.batch_size

    @property
    def speedup(self) -> float:
        return self.best.speedup

    @property
    def ci_low(self) -> float | None:
        return self.best.ci_low

    @property
    def ci_high(self) -> float | None:
        return self.best.ci_high

    @property
    def verdict(self) -> str:
        return self.best.verdict or vd.NO_INTERVAL

    @property
    def step_ms(self) -> float:
        return self.best.step_ms

    @property
    def eager_ms(self) -> float | None:
        return self.best.eager_ms

    @property
    def rank(self) -> float:
        return self.best.rank

    def speedup_text(self) -> str:
        """The speedup as the one rule quotes it: '6.80x (6.05-7.57x)'."""
        return vd.quoted(self.speedup, self.ci_low, self.ci_high)

    def memory_text(self) -> str:
        """What the point costs in memory, its definition named (memory.py)."""
        return memory.cost_text(self.point, parts=False)


def _spread(x: Speedup) -> float:
    if x.ci_low is None or x.ci_high is None or x.ci_low <= 0:
        return math.inf
    return x.ci_high / x.ci_low


def _mode_best(points: list[Speedup]) -> ModeBest:
    points = sorted(points, key=lambda x: x.batch_size)
    left_out = tuple(x.batch_size for x in points if x.verdict == vd.INCONCLUSIVE)
    ranked = [x for x in points if x.verdict in vd.RANKABLE]
    if not ranked:  # nothing to rank: the narrowest interval stands for the mode
        return ModeBest(min(points, key=_spread), (), left_out)
    # max() keeps the first of equal ranks: the smallest batch.
    best = max(ranked, key=lambda x: x.rank)
    ties = {x.batch_size for x in ranked if x.ci_low is not None
            and x.ci_high is not None and x.ci_low <= best.speedup <= x.ci_high}
    return ModeBest(best, tuple(sorted(ties | {best.batch_size})), left_out)


def mode_bests(found: Iterable[Speedup]) -> tuple[ModeBest, ...]:
    """Per mode other than eager, its best (of one run's speedups), in mode order."""
    by_mode: dict[str, list[Speedup]] = {}
    for x in found:
        if x.mode != BASELINE_MODE:
            by_mode.setdefault(x.mode, []).append(x)
    return tuple(_mode_best(by_mode[m]) for m in ALTERNATIVE_MODES if m in by_mode)


def key_best(bests: Iterable[ModeBest]) -> ModeBest | None:
    """The best a run is quoted by: the highest rank over every mode's best; never an
    inconclusive one."""
    found = [b for b in bests if b.verdict != vd.INCONCLUSIVE]
    return max(found, key=lambda b: b.rank) if found else None


@dataclass(frozen=True)
class BreakEven:
    """Where reduce-overhead stops gaining `threshold`x over compile.

    status: "crosses" (gains at `last_gaining`, below threshold from `batch_size` on),
    "never-below" (gains at every measured batch), "always-below" (at none), or
    "unknown" (no batch size with both modes measured)."""
    status: str
    batch_size: int | None = None      # first batch from which every larger one is below
    last_gaining: int | None = None    # largest batch that still gains >= threshold
    threshold: float = BREAK_EVEN_GAIN
    ratios: tuple[tuple[int, float], ...] = ()  # (batch, compile_ms / reduce_overhead_ms)


def break_even_ratios(points: Iterable[Measurement]) -> tuple[tuple[int, float], ...]:
    """(batch, reduce-overhead's gain over compile) where both were measured: the paired
    per-round ratio where the runner stored it, else the ratio of medians."""
    ok = usable(points)
    compile_ms = {p.batch_size: float(p.timing.step_ms or 0) for p in ok
                  if p.mode == BREAK_EVEN_REFERENCE}
    out = []
    for p in sorted(ok, key=lambda p: p.batch_size):
        if p.mode != BREAK_EVEN_MODE or p.batch_size not in compile_ms:
            continue
        vs = p.intervals.vs_compile
        paired = number_or_none(vs.median) if vs is not None else None
        out.append((p.batch_size, paired if paired is not None
                    else compile_ms[p.batch_size] / float(p.timing.step_ms or 0)))
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


def break_even(points: Iterable[Measurement], threshold: float = BREAK_EVEN_GAIN
               ) -> BreakEven:
    """Where reduce-overhead stops gaining `threshold`x over compile, and around it."""
    ratios = break_even_ratios(points)
    if not ratios:
        return BreakEven("unknown", threshold=threshold)
    below = first_below(ratios, threshold)
    if below is None:
        return BreakEven("never-below", last_gaining=ratios[-1][0], threshold=threshold,
                         ratios=ratios)
    if below == ratios[0][0]:
        return BreakEven("always-below", batch_size=below, threshold=threshold,
                         ratios=ratios)
    last = max(b for b, _ in ratios if b < below)
    return BreakEven("crosses", batch_size=below, last_gaining=last, threshold=threshold,
                     ratios=ratios)


@dataclass(frozen=True)
class Payback:
    """Steps a mode must run to repay its setup (compile, warm-up, capture) with its
    per-step saving over eager: ceil(setup_s * 1000 / saving_ms). `steps` None: setup
    unknown, or the mode saves nothing (`never`: it never pays back)."""
    setup_s: float | None
    saving_ms: float | None
    steps: float | None
    never: bool


def payback(s: Speedup) -> Payback:
    saving = None if s.eager_ms is None else s.eager_ms - s.step_ms
    never = saving is not None and saving <= 0
    setup = number_or_none(s.point.setup.setup_s)
    steps = (None if setup is None or never or saving is None
             else float(math.ceil(setup * 1000.0 / saving)))
    return Payback(setup, saving, steps, never)


__all__ = ["BREAK_EVEN_GAIN", "BREAK_EVEN_LABEL", "BREAK_EVEN_MODE", "BREAK_EVEN_REFERENCE",
           "BreakEven", "ModeBest", "Payback", "Speedup", "break_even", "break_even_ratios",
           "first_below", "in_mode_order", "key_best", "mode_bests", "mode_order",
           "payback", "speedups", "usable"]
