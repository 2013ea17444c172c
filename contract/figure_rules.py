"""Figures that contradict each other or physical sense, refused where a bundle is read
(issue 48, item 2): one rule set for `import`, the dashboard's upload, `check --run FILE`
and a writer storing a point, so a page never meets a median outside its own interval or
a step of 1e308 ms (an OverflowError in a chart's axis).

Each refusal is one line naming the point and the field. The rules:
- a median lies within its 95% interval and within its p10 and p90 (step time), and
  within its interval (speedup, energy per step, energy gain); p10 <= p90;
- a time (the step, its percentiles and interval, the per-call latency, the GPU's busy
  time, the split of the step, each round's sample) is at most MAX_STEP_MS, an hour: a
  benchmark step of an hour is a hang, not a measurement;
- no figure is beyond MAX_FIGURE in size (1e15: a petabyte, a million-x speedup);
- a pool, a peak or a change of reserved memory is at most the GPU's memory, where the
  bundle names it;
- a run's times lie between EARLIEST and a day after now (a host's clock or time zone may
  be off by hours, not years), and it finishes no earlier than it started.

Comparisons allow a relative RELATIVE_SLACK, so a published figure rounded to its
printed digits is not refused for a last-digit difference. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

MAX_STEP_MS = 3_600_000.0  # an hour
MAX_FIGURE = 1e15
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
CLOCK_SKEW = timedelta(days=1)
RELATIVE_SLACK = 1e-9

# Fields holding a time in milliseconds: each at most MAX_STEP_MS.
TIME_FIELDS = ("step_ms", "step_ms_p10", "step_ms_p90", "step_ms_ci_low", "step_ms_ci_high",
               "latency_ms", "gpu_busy_ms", "split_gpu_ms", "split_launch_ms",
               "split_rest_ms")
# Memory figures bounded by the GPU's memory (magnitude: reserved_delta_bytes is signed).
MEMORY_FIELDS = ("graph_pool_bytes", "peak_allocated_bytes", "reserved_delta_bytes",
                 "memory_cost_bytes")
# (figure, its low bound, its high bound, what the bounds are): the figure lies within.
WITHIN = (
    ("step_ms", "step_ms_ci_low", "step_ms_ci_high", "its 95% interval"),
    ("step_ms", "step_ms_p10", "step_ms_p90", "its p10 and p90"),
    ("speedup", "speedup_ci_low", "speedup_ci_high", "its 95% interval"),
    ("energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
     "its 95% interval"),
    ("energy_gain", "energy_gain_ci_low", "energy_gain_ci_high", "its 95% interval"),
)


class FigureError(ValueError):
    """Figures that cannot all be true. str() is the one line naming the field."""


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _at_most(a: float, b: float) -> bool:
    """a <= b, give or take RELATIVE_SLACK."""
    return a <= b + RELATIVE_SLACK * max(abs(a), abs(b))


def check_point(where: str, m: Mapping[str, Any], gpu_memory_bytes: int | None = None
                ) -> None:
    """One measurement's figures (its JSON, shapes already checked); FigureError names
    `where` and the field."""
    for f, v in m.items():
        x = _num(v)
        if x is not None and abs(x) > MAX_FIGURE:
            raise FigureError(f"{where}: {f} {x:.4g} is beyond any figure launchbench "
                              f"records (more than {MAX_FIGURE:.0e} in size)")
    for f in TIME_FIELDS:
        x = _num(m.get(f))
        if x is not None and x > MAX_STEP_MS:
            raise FigureError(f"{where}: {f} {x:.4g} ms is over an hour: a hang, not a "
                              "step time")
    samples = m.get("samples_ms")
    if isinstance(samples, list) and samples:
        worst = max((_num(s) or 0.0) for s in samples)
        if worst > MAX_STEP_MS:
            raise FigureError(f"{where}: samples_ms holds {worst:.4g} ms, over an hour")
    for figure, lo_f, hi_f, what in WITHIN:
        x, lo, hi = _num(m.get(figure)), _num(m.get(lo_f)), _num(m.get(hi_f))
        if lo is not None and hi is not None and not _at_most(lo, hi):
            raise FigureError(f"{where}: {lo_f} {lo:.6g} is above {hi_f} {hi:.6g}")
        if x is None:
            continue
        if lo is not None and not _at_most(lo, x):
            raise FigureError(f"{where}: {figure} {x:.6g} lies below {what} ({lo_f} "
                              f"{lo:.6g})")
        if hi is not None and not _at_most(x, hi):
            raise FigureError(f"{where}: {figure} {x:.6g} lies above {what} ({hi_f} "
                              f"{hi:.6g})")
    if gpu_memory_bytes:
        for f in MEMORY_FIELDS:
            x = _num(m.get(f))
            if x is not None and abs(x) > gpu_memory_bytes:
                raise FigureError(f"{where}: {f} {int(x):,} bytes is more than the GPU's "
                                  f"memory (environment.gpu_memory_bytes "
                                  f"{gpu_memory_bytes:,})")


def check_times(created: datetime | None, finished: datetime | None,
                now: datetime | None = None) -> None:
    """A run's start and end: after EARLIEST, at most CLOCK_SKEW after `now` (default:
    the clock), and the end not before the start."""
    latest = (now or datetime.now(timezone.utc)) + CLOCK_SKEW
    for name, t in (("run.created_at", created), ("run.finished_at", finished)):
        if t is None:
            continue
        if t < EARLIEST:
            raise FigureError(f"{name} {t.isoformat()} is before {EARLIEST.year}: no "
                              "launchbench run is that old")
        if t > latest:
            raise FigureError(f"{name} {t.isoformat()} is in the future (after "
                              f"{latest.isoformat(timespec='seconds')})")
    if created is not None and finished is not None and finished < created:
        raise FigureError(f"run.finished_at {finished.isoformat()} is before run.created_at "
                          f"{created.isoformat()}")
