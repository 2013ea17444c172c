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


def applies(headers: Sequence[RunHeader]) -> bool:
    """Whether two or more GPUs were measured among these runs (published ones aside)."""
    return len({device_name(h) for h in headers if h.source != "published"}) > 1


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


def _short(gpu: str) -> str:
    """'H100' for 'NVIDIA H100 80GB HBM3': the run's id beside it names the run, and the
    table fits 1280 px (the full names are in the runs picker above)."""
    words = gpu.removeprefix("NVIDIA ").split()
    return words[0] if words else gpu


def _answer(side: Side, win: Side | None, loser: Side | None, at_us: float) -> str:
    """One side's answer in a few words: which gains more, and whether that stays so at
    the common launch cost (then the GPU's work, not the host's launch cost)."""
    if win is None:
        return OVERLAP
    if side is not win:
        return "no"
    if side.at is None or loser is None or loser.at is None:
        return "yes (no launch cost)"
    if side.at > loser.at * (1 + SAME_PROJECTED):
        return f"yes, also at {at_us:g} us"
    return HOSTS_COST


# The answer's words, short enough for a cell at 1280 px (the caption spells them out).
OVERLAP = "neither: overlap"
HOSTS_COST = "yes: host's cost"  # at the common launch cost it is no longer ahead


def _long_rows(a: Side, b: Side, mode: str, batch: int, at_us: float) -> list[dict]:
    at = f"at {at_us:g} us"
    win = _more(a, b)
    rows = []
    for side in (a, b):
        loser = None if win is None else (b if win is a else a)
        rows.append({"mode": mode, "batch": batch, "GPU": f"#{side.run_id} {_short(side.gpu)}",
                     "speedup": _figure(side),
                     at: "—" if side.at is None else f"{side.at:.2f}x",
                     "GPU busy ms": "—" if side.busy_ms is None else f"{side.busy_ms:.3f}",
                     "launch us": "—" if side.launch_us is None else f"{side.launch_us:.1f}",
                     "gains more": _answer(side, win, loser, at_us)})
    return rows


def gains_long(headers: Sequence[RunHeader], points: RunPoints,
               at_us: float = 10.0) -> pd.DataFrame:
    """gains_table's answer a row per GPU, narrow enough for Compare at 1280 px: per graph
    mode and batch the two GPUs' speedups, each one's speedup at the common launch cost
    `at_us`, its GPU busy time a step (the GPU's work) and its launch cost (the host's),
    and which gains more. Text cells, a dash where a figure is unknown."""
    cols = ["mode", "batch", "GPU", "speedup", f"at {at_us:g} us", "GPU busy ms", "launch us",
            "gains more"]
    if not applies(headers):
        return pd.DataFrame(columns=cols)
    order = {m: i for i, m in enumerate(CUDA_GRAPH_MODES)}
    rows: list[dict] = []
    for (mode, batch), sides in sorted(_sides(headers, points, at_us).items(),
                                       key=lambda kv: (order[kv[0][0]], kv[0][1])):
        pair = [s for s in sides if s.gpu != sides[0].gpu][:1]
        if pair:
            rows += _long_rows(sides[0], pair[0], mode, batch, at_us)
    return pd.DataFrame(rows, columns=cols)


def summary(table: pd.DataFrame) -> str:
    """gains_long's answer in one sentence: how often each GPU gains more, and how often
    the intervals leave it open."""
    if table.empty:
        return ""
    won = table[table["gains more"].str.startswith("yes")]
    pairs = len(table) // 2
    parts = [f"The {gpu.split(' ', 1)[1]} gains more at {n} of {pairs}"
             for gpu, n in won["GPU"].value_counts().items()]
    kept = int(won["gains more"].str.contains(", also at ").sum())
    open_ = int((table["gains more"] == OVERLAP).sum()) // 2
    # 'at 8' alone read as batch size 8: the count names its unit.
    where = (f"at all {pairs} mode-and-batch points" if open_ == pairs
             else f"at {open_} of the {pairs} mode-and-batch points")
    return ("; ".join(parts) or "Neither GPU gains more at any shared point") + (
        f" mode-and-batch points ({kept} of them also at the common launch cost)"
        if parts else "") + f"; {where} the intervals overlap, so neither is said to."


def left_out(headers: Sequence[RunHeader]) -> list[str]:
    """The published runs the answer leaves out: no launch cost, no interval."""
    names = run_names(headers)
    return [names[h.id] for h in headers if h.source == "published"]


__all__ = ["SAME_PROJECTED", "applies", "gains_long", "gains_table", "left_out", "summary"]
