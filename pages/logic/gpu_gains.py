"""Which GPU gains more from graphs (issue 47): Compare's answer when the runs were
measured on different GPUs. Per graph mode and batch size that two or more measured runs
share: each run's speedup over eager with its interval, which run gains more (only where
the intervals part: an overlap is no answer), and whether that stays so at a common
launch cost (host_split's projection): if it does, the difference is not the launch
cost; if it does not, it was the host's launch cost. The GPU busy times stand beside it.
A published run has no launch cost to project and no interval to part, so it is left out
and named.

The rules are the contract's (speedups.py, host_split.py); this module only pairs the
runs and words the answer, as records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from contract import verdict as vd
from contract.measurement import Measurement
from contract.run_summary import RunHeader
from contract.speedups import Speedup, speedups, usable
from contract.vocab import CUDA_GRAPH_MODES
from pages.logic import step_split
from pages.logic.comparing import RunPoints, run_names
from pages.logic.names import device_name

# Within this of each other, two projected speedups are the same answer: the projection
# carries the launch cost's spread (a few %) and no interval of its own.
SAME_PROJECTED = 0.05


@dataclass(frozen=True)
class Side:
    """One run's figures at one (mode, batch): its speedup, the speedup projected to the
    common launch cost (None: cannot be), its GPU busy a step and its launch cost."""
    run_id: int
    gpu: str
    speedup: Speedup
    at: float | None
    busy_ms: float | None
    launch_us: float | None


def _sides(headers: Sequence[RunHeader], points: RunPoints, at_us: float
           ) -> dict[tuple[str, int], list[Side]]:
    out: dict[tuple[str, int], list[Side]] = {}
    for h in headers:
        if h.source == "published":
            continue
        pts = points.get(h.id, [])
        ok = {(m.mode, m.batch_size): m for m in usable(pts)}
        at = step_split.projected_speedups(pts)
        for s in speedups(pts):
            if s.mode not in CUDA_GRAPH_MODES:
                continue
            m: Measurement = ok[(s.mode, s.batch_size)]
            out.setdefault((s.mode, s.batch_size), []).append(Side(
                h.id, device_name(h), s, at.get((s.mode, s.batch_size), {}).get(float(at_us)),
                m.launches.gpu_busy_ms, m.intervals.launch_us))
    return out


def _more(a: Side, b: Side) -> Side | None:
    """The side whose speedup's interval lies wholly above the other's; None where they
    overlap or either has none."""
    x, y = a.speedup, b.speedup
    if None in (x.ci_low, x.ci_high, y.ci_low, y.ci_high):
        return None
    if x.ci_low > y.ci_high:  # type: ignore[operator]
        return a
    if y.ci_low > x.ci_high:  # type: ignore[operator]
        return b
    return None


def _why(winner: Side, loser: Side, at_us: float) -> str:
    """Whether the winner still gains more at a common launch cost (then it is not the
    host's launch cost) or not (then it was), with the GPU busy times beside."""
    busy = f"GPU busy {winner.busy_ms or 0:.3f} against {loser.busy_ms or 0:.3f} ms a step"
    if winner.at is None or loser.at is None:
        return f"cannot say: a launch cost is missing; {busy}"
    if winner.at > loser.at * (1 + SAME_PROJECTED):
        return (f"not the launch cost: still more at {at_us:g} us a launch "
                f"({winner.at:.2f}x against {loser.at:.2f}x); {busy}")
    return (f"the host's launch cost ({winner.launch_us or 0:.1f} against "
            f"{loser.launch_us or 0:.1f} us): at {at_us:g} us a launch {winner.at:.2f}x "
            f"and {loser.at:.2f}x; {busy}")


def _figure(side: Side) -> str:
    s = side.speedup
    return vd.quoted(s.speedup, s.ci_low, s.ci_high)


def gains_table(headers: Sequence[RunHeader], points: RunPoints,
                at_us: float = 10.0) -> pd.DataFrame:
    """One row per graph mode and batch size that two or more measured runs on different
    GPUs share (the first two in the headers' order): each run's speedup, which GPU
    gains more, and why. Empty where fewer than two GPUs were measured."""
    names = run_names(headers)
    gpus = {h.id: device_name(h) for h in headers if h.source != "published"}
    cols = ["mode", "batch", "gains more", "why"]
    if len(set(gpus.values())) < 2:
        return pd.DataFrame(columns=cols)
    rows = []
    for (mode, batch), sides in sorted(_sides(headers, points, at_us).items(),
                                       key=lambda kv: (kv[0][0], kv[0][1])):
        pair = [s for s in sides if s.gpu != sides[0].gpu][:1]
        if not pair:
            continue
        a, b = sides[0], pair[0]
        win = _more(a, b)
        loser = b if win is a else a
        row = {"mode": mode, "batch": batch, names[a.run_id]: _figure(a),
               names[b.run_id]: _figure(b),
               "gains more": "neither: the intervals overlap" if win is None else win.gpu,
               "why": "" if win is None else _why(win, loser, at_us)}
        if win is None and a.at is not None and b.at is not None:
            row["why"] = (f"at {at_us:g} us a launch: {a.at:.2f}x and {b.at:.2f}x "
                          f"(GPU busy {a.busy_ms or 0:.3f} and {b.busy_ms or 0:.3f} ms)")
        rows.append(row)
    runs = [c for c in dict.fromkeys(c for r in rows for c in r) if c not in cols]
    return pd.DataFrame(rows, columns=["mode", "batch", *runs, "gains more", "why"])


def left_out(headers: Sequence[RunHeader]) -> list[str]:
    """The published runs the answer leaves out: no launch cost, no interval."""
    names = run_names(headers)
    return [names[h.id] for h in headers if h.source == "published"]


__all__ = ["SAME_PROJECTED", "gains_table", "left_out"]
