"""How long a sweep on the Launch page will take, before it is queued and while it runs:
the estimate from past runs of the workload on the device that runs it (none without
one: no figure is made up; compiles counted apart), the progress bar's fraction and the
time left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contract.measurement import Measurement
from contract.queue import Job, JobProgress
from contract.specs import SweepSpec
from contract.vocab import COMPILED_MODES


def format_seconds(s: float | None) -> str:
    if s is None:
        return "—"
    s = int(round(s))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else (
        f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s")


@dataclass(frozen=True)
class Estimate:
    points: int
    seconds: float | None  # None: no estimate (the basis says why)
    basis: str  # where the figure comes from, in words
    at_least: bool = False  # compiles left out: none measured on this device

    def text(self) -> str:
        if self.seconds is None:
            return f"{self.points} point(s) · {self.basis}"
        return (f"{self.points} point(s) · {'at least' if self.at_least else 'about'} "
                f"{format_seconds(self.seconds)} ({self.basis})")


def point_count(spec: SweepSpec | Job) -> int:
    return len(spec.batch_sizes) * len(spec.modes)


def compiled_count(spec: SweepSpec | Job) -> int:
    """Points whose mode goes through torch.compile: each pays a compile."""
    return len(spec.batch_sizes) * sum(m in COMPILED_MODES for m in spec.modes)


def per_point_s(history) -> list[float]:
    """Seconds per point of each past run (queries.past_durations' frame): the sum of its
    points' wall times where recorded, else finished_at - created_at over its points."""
    return [wall / n for wall, n, _ in _run_walls(history)]


def _run_walls(history) -> list[tuple[float, int, Any]]:
    """(wall seconds, points, run_id) of each past run with both known."""
    out = []
    for r in history.itertuples(index=False):
        n = r.points or 0
        if not n:
            continue
        wall = r.point_wall_s
        if wall is None or wall != wall:
            start, end = r.created_at, r.finished_at
            if start is None or end is None or end != end or start != start:
                continue
            wall = (end - start).total_seconds()
        if wall > 0:
            out.append((float(wall), int(n), r.run_id))
    return out


def past_setups(points: Mapping[int, Sequence[Measurement]] | None
                ) -> dict[int, list[float]]:
    """Run id -> the setup seconds (compile, warm-up calls) of each of its compiled ok
    points, from the points' details (queries.points' records): phase_s["setup"]."""
    out: dict[int, list[float]] = {}
    for rid, pts in (points or {}).items():
        for m in pts:
            if m.mode not in COMPILED_MODES or m.status != "ok":
                continue
            # Seconds by phase name, as the runner stored them: a point that failed
            # before its setup, or one from before phases were timed, has no "setup".
            phases = m.timing.phase_s
            s = phases["setup"] if isinstance(phases, dict) and "setup" in phases else None
            if isinstance(s, (int, float)) and s == s and s >= 0:
                out.setdefault(rid, []).append(float(s))
    return out


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    k = len(xs) // 2
    return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2


def _span(seconds: list[float]) -> str:
    lo, hi = min(seconds), max(seconds)
    return f"{lo:.0f} s" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} s"


def estimate(spec: SweepSpec | Job, history, where: str | None,
             points: Mapping[int, Sequence[Measurement]] | None = None,
             device_compiles: list[float] | None = None) -> Estimate:
    """`spec`: the sweep checked on the form (Checked.spec), or a queued job.

    Only from past runs of the workload on the device that will run it (`where`: 'CPU'
    or a GPU's name; None when that is not known before a worker takes the job): an H200
    run says nothing of a CPU's compile, so a figure borrowed across devices misled by
    4x (issue 37: "about 12 s", took 53 s). The median seconds per point of those runs
    less their compiles, times the point count, plus the mean past compile per compiled
    point; `points` are those runs' points (queries.key_points), whose details hold each
    compile's time. Without a past run there is no estimate; without a past compile the
    compiles are left out and the figure is a floor. `device_compiles` (seconds, any
    workload on this device) are quoted beside either, never added: measured, not made
    up."""
    n, n_compiled = point_count(spec), compiled_count(spec)
    workload = spec.workload
    if where is None:
        return Estimate(n, None, "no estimate: which device runs it is known only once a "
                                 "worker takes it (choose cpu, or a target, to get one)")
    seen = (f"; compiles took {_span(device_compiles)} here on {where}"
            if device_compiles and n_compiled else "")
    walls = _run_walls(history) if history is not None else []
    if not walls:
        return Estimate(n, None, f"no estimate: first run of {workload} on {where}{seen}")
    setups = past_setups(points)
    measured = [s for run in setups.values() for s in run]
    if not measured and any(m.mode in COMPILED_MODES
                            for pts in (points or {}).values() for m in pts):
        # Past compiled points without a recorded setup (older runs): their compiles are
        # inside their per-point figure already; splitting would count them twice.
        per = _median([wall / k for wall, k, _ in walls])
        return Estimate(n, per * n, f"from {len(walls)} past run(s) of {workload} on "
                                    f"{where}, {per:.1f} s per point, compiles included")
    # A past run's compiles come out of its per-point figure: a new sweep's share of
    # compiled points may differ from theirs.
    base = _median([max(0.0, wall - sum(setups.get(rid, []))) / k for wall, k, rid in walls])
    basis = f"from {len(walls)} past run(s) of {workload} on {where}, {base:.1f} s per point"
    if not n_compiled:
        return Estimate(n, base * n, basis)
    if measured:
        each = sum(measured) / len(measured)  # a mean: the first, cold compile included
        return Estimate(n, base * n + each * n_compiled,
                        f"{basis} + {each:.0f} s per compiled point (past compiles)")
    return Estimate(n, base * n, f"{basis}; its {n_compiled} compiled point(s) not "
                                 f"counted: no past compile of {workload} on {where}{seen}",
                    at_least=True)


def bar_fraction(job: Job, p: JobProgress) -> float | None:
    """The bar: the points measured, of all (None while the total is unknown). Nothing
    in flight is counted: a bar a quarter full beside "0 of 4 points measured" (issue
    46: a sweep that waited 12 minutes for the host's timing lock) claimed work that was
    not done. What is in flight is said in words beside it (the job's current point,
    what it waits for)."""
    total, done = p.total, p.done or 0
    if not total:
        return None
    return min(1.0, done / total)


def time_left(p: JobProgress, estimate_s: float | None,
              now: str | None = None) -> tuple[float | None, str]:
    """(seconds left, what the figure rests on) of a job in flight, from db.jobs.progress's
    `p`: the rate of its measured points once one is done; before that (a cold compile
    may take minutes) the estimate made before Launch less the time spent. Where neither
    gives a figure above zero (all points measured but the job not ended; the estimate
    passed) the seconds are None and the words say what is still running (`now`, the
    job's current point): "0 s" for the last half minute of a sweep was untrue."""
    still = f"still running: {now}" if now else "still running"
    if p.remaining_s is not None:
        if p.remaining_s > 0:
            return p.remaining_s, "from the points measured so far"
        return None, f"all {p.total} points measured; {still}"
    if estimate_s is None or p.elapsed_s is None:
        return None, still if p.elapsed_s is not None else ""
    if p.elapsed_s < estimate_s:
        return estimate_s - p.elapsed_s, "from the estimate, no point measured yet"
    return None, f"past the estimate of {format_seconds(estimate_s)}; {still}"
