"""Host and GPU apart on the pages (issue 39): each point's step split into GPU busy, launch
cost and the rest; eager's rounds against the round's launch cost, with the projection
line; the speedup projected to a reference launch cost. The rules are
contract/host_split.py's (one place, shared with the CLI and the runner): this module
only picks the points and rounds a chart or table shows, as records.

A bundle of version 6 stores the split and the projected speedups; an older bundle that
kept GPU busy time, launches and the launch cost gets the same figures computed from them
by the same functions (host_split.point_split, speedups_at_launch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contract import host_split
from contract.measurement import Measurement
from contract.numbers import number_or_none, percentile
from contract.speedups import in_mode_order, usable

PART_NAMES = tuple(host_split.PARTS)  # gpu, launch, rest: the order they stack in
# The one sentence that says what the projection assumes, wherever a projected figure is.
PROJECTION_RULE = ("a step at another launch cost L is max(GPU busy, the host's time a step "
                   "x L / the launch cost it was measured at): the host's whole path "
                   "(Python included) runs on the same slow or quick CPU")

VIEW_CAPTION = ("Each step = GPU busy (its kernels' time) + launch cost (launches a step x "
                "the host's cost of one trivial kernel launch) + the rest of the host "
                "(Python, dispatcher, syncs), as shares of the step. The scatter: eager's "
                "step in each round against that round's launch cost, a colour per "
                "process; the lines (a dash per batch size): the projection, " + PROJECTION_RULE
                + ".")


def splits(points: Sequence[Measurement]) -> list[tuple[Measurement, host_split.StepSplit]]:
    """Each ok point with a split, in mode order. Empty for a run without GPU busy time
    or launch cost (CPU runs, published figures)."""
    out = []
    for m in in_mode_order(usable(points)):
        s = host_split.point_split(m)
        if s is not None:
            out.append((m, s))
    return out


@dataclass(frozen=True)
class Round:
    """One timed round of a point: its batch, index, process, launch cost and step."""
    batch_size: int
    round: int
    process: int
    launch_us: float
    step_ms: float


def launch_rounds(points: Sequence[Measurement], mode: str = "eager") -> list[Round]:
    """The mode's rounds that carry a launch cost, batch by batch."""
    rows = []
    for m in usable(p for p in points if p.mode == mode):
        samples, costs = m.timing.samples_ms or [], m.intervals.launch_us_rounds or []
        if not samples or len(samples) != len(costs):
            continue
        procs = m.intervals.round_process or []
        procs = procs if len(procs) == len(samples) else [0] * len(samples)
        for i, (s, u, p) in enumerate(zip(samples, costs, procs, strict=True)):
            step, cost = number_or_none(s), number_or_none(u)
            if step is not None and cost is not None:
                rows.append(Round(m.batch_size, i, int(p), cost, step))
    return rows


def projection_lines(points: Sequence[Measurement], rounds: Sequence[Round],
                     mode: str = "eager", steps: int = 24
                     ) -> list[tuple[int, float, float]]:
    """Per batch size, (batch, launch cost, projected step) over the launch costs its
    rounds span: host_split.projected_step from the point's GPU busy time and host time a
    step, taken as measured at the median of its rounds' launch costs (host_split.
    check_rounds does the same)."""
    rows = []
    for m in usable(p for p in points if p.mode == mode):
        seen = [r.launch_us for r in rounds if r.batch_size == m.batch_size]
        if not seen:
            continue
        # Drawn over the middle 90% of the rounds' launch costs: one 40 us round (a
        # preempted probe) stretched the line to ten times the steps it explains.
        ref = percentile(seen, 50)
        lo, hi = percentile(seen, 5), percentile(seen, 95)
        for k in range(steps + 1):
            at = lo + (hi - lo) * k / steps
            y = host_split.projected_step(m.launches.gpu_busy_ms, m.timing.host_ms_per_step,
                                          ref, at)
            if y is not None:
                rows.append((m.batch_size, at, y))
    return rows


def projected_speedups(points: Sequence[Measurement]
                       ) -> dict[tuple[str, int], dict[float, float]]:
    """One run's ok non-eager points: (mode, batch) -> {reference launch cost: speedup}
    (host_split.speedups_at_launch; a cost it cannot project to is absent)."""
    ok = usable(points)
    eager = {m.batch_size: m for m in ok if m.mode == "eager"}
    return {(m.mode, m.batch_size): host_split.speedups_at_launch(m, eager.get(m.batch_size))
            for m in ok if m.mode != "eager"}
