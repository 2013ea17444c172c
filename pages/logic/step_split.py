"""Host and GPU apart on the pages (issue 39): each point's step split into GPU busy, launch
cost and the rest, with shares; eager's rounds against the round's launch cost, with the
projection line; the speedup projected to a reference launch cost; and how `noisy` was
judged. The rules are contract/host_split.py's (one place, shared with the CLI and
the runner): this module only reads them into frames. Pure pandas, like analysis.py.

A bundle of version 6 stores the split (split_gpu_ms, split_launch_ms, split_rest_ms) and
the projected speedups (details.speedup_at_launch_us); an older bundle that kept GPU busy
time, launches and the launch cost gets the same figures computed here from them, by the
same functions, so the view does not depend on the bundle's age.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from contract import host_split
from contract.measurement import Measurement
from contract.numbers import number_or_none, percentile
from pages.logic.analysis import in_mode_order, point_record, usable

PART_NAMES = tuple(host_split.PARTS)  # gpu, launch, rest: the order they stack in
SPLIT_COLUMNS = ("run_id", "mode", "batch_size", "step_ms", "gpu_ms", "launch_ms", "rest_ms",
                 "gpu_share", "launch_share", "rest_share")
# The one sentence that says what the projection assumes, wherever a projected figure is.
PROJECTION_RULE = ("a step at another launch cost L is max(GPU busy, the host's time a step "
                   "x L / the launch cost it was measured at): the host's whole path "
                   "(Python included) runs on the same slow or quick CPU")

VIEW_CAPTION = ("Each step = GPU busy (its kernels' time) + launch cost (launches a step x "
                "the host's cost of one trivial kernel launch) + the rest of the host "
                "(Python, dispatcher, syncs), as shares of the step. The scatter: eager's "
                "step in each round against that round's launch cost, a colour per "
                "process; dashed: the projection, " + PROJECTION_RULE + ".")


def point_split(m: Measurement) -> host_split.StepSplit | None:
    """The point's stored split, else one computed from its figures (an older bundle)."""
    # A database frame reads an unknown figure as NaN: number_or_none is the one reading.
    parts = [number_or_none(v) for v in (m.split.gpu_ms, m.split.launch_ms, m.split.rest_ms)]
    step = number_or_none(m.timing.step_ms)
    if None not in parts and step is not None and step > 0:
        return host_split.StepSplit(step, *parts)
    return host_split.of(m)


def split_frame(points: pd.DataFrame) -> pd.DataFrame:
    """One row per ok point with a split: its parts (ms) and their shares of the step.
    Empty for a run without GPU busy time or launch cost (CPU runs, published figures)."""
    rows = []
    for _, row in usable(points).iterrows():
        s = point_split(point_record(row))
        if s is None:
            continue
        rows.append({"run_id": row["run_id"], "mode": row["mode"],
                     "batch_size": int(row["batch_size"]), "step_ms": s.step_ms,
                     **{f"{p}_ms": getattr(s, f"{p}_ms") for p in PART_NAMES},
                     **{f"{p}_share": s.share(p) for p in PART_NAMES}})
    return in_mode_order(pd.DataFrame(rows, columns=list(SPLIT_COLUMNS)))


def split_long(split: pd.DataFrame) -> pd.DataFrame:
    """split_frame in long form for a stacked chart: one row per (point, part), the part
    named as host_split.PARTS names it."""
    if split.empty:
        return pd.DataFrame(columns=["mode", "batch_size", "part", "ms", "share", "order"])
    rows = [{"mode": r["mode"], "batch_size": r["batch_size"], "part": host_split.PARTS[p],
             "ms": r[f"{p}_ms"], "share": r[f"{p}_share"], "order": float(i)}
            for _, r in split.iterrows() for i, p in enumerate(PART_NAMES)]
    return pd.DataFrame(rows)


def share_table(split: pd.DataFrame) -> pd.DataFrame:
    """Each point's split as a table: parts in ms and their shares in percent."""
    if split.empty:
        return pd.DataFrame()
    out = pd.DataFrame({"mode": split["mode"], "batch": split["batch_size"],
                        "step ms": split["step_ms"]})
    for p in PART_NAMES:
        out[f"{host_split.PARTS[p].split(' (')[0]} ms"] = split[f"{p}_ms"]
        out[f"{host_split.PARTS[p].split(' (')[0]} %"] = split[f"{p}_share"] * 100
    return out.reset_index(drop=True)


def launch_rounds(points: pd.DataFrame, mode: str = "eager") -> pd.DataFrame:
    """The mode's rounds, one row each: batch, round, the process that ran it, the round's
    launch cost (us) and step (ms). Rounds without a launch cost are left out."""
    rows = []
    for _, row in usable(points[points["mode"] == mode]).iterrows():
        m = point_record(row)
        samples, costs = m.timing.samples_ms or [], m.intervals.launch_us_rounds or []
        if not samples or len(samples) != len(costs):
            continue
        procs = m.intervals.round_process or []
        procs = procs if len(procs) == len(samples) else [0] * len(samples)
        rows += [{"batch_size": int(m.batch_size), "round": i, "process": int(p),
                  "launch_us": u, "step_ms": s}
                 for i, (s, u, p) in enumerate(zip(samples, costs, procs, strict=True))
                 if number_or_none(u) is not None and number_or_none(s) is not None]
    return pd.DataFrame(rows, columns=["batch_size", "round", "process", "launch_us",
                                       "step_ms"])


def projection_lines(points: pd.DataFrame, rounds: pd.DataFrame, mode: str = "eager",
                     steps: int = 24) -> pd.DataFrame:
    """Per batch size, the projected step over the launch costs its rounds span:
    host_split.projected_step from the point's GPU busy time and host time a step, taken
    as measured at the median of its rounds' launch costs (host_split.check_rounds does
    the same)."""
    rows = []
    for _, row in usable(points[points["mode"] == mode]).iterrows():
        m = point_record(row)
        seen = rounds.loc[rounds["batch_size"] == int(m.batch_size), "launch_us"].tolist()
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
                rows.append({"batch_size": int(m.batch_size), "launch_us": at, "step_ms": y})
    return pd.DataFrame(rows, columns=["batch_size", "launch_us", "step_ms"])


def speedups_at_launch(m: Measurement, eager: Measurement | None) -> dict[float, float]:
    """The point's speedup projected to each reference launch cost (us -> x): the stored
    details.speedup_at_launch_us, else computed from both points' figures."""
    stored = m.split.speedup_at_launch_us
    if isinstance(stored, Mapping) and stored:
        out = {}
        for k, v in stored.items():
            us, x = number_or_none(k), number_or_none(v)
            if us is not None and x is not None:
                out[us] = x
        return out
    if eager is None or m.mode == "eager":
        return {}
    got = {u: host_split.projected_speedup(host_split.host_figures(eager),
                                           host_split.host_figures(m), u)
           for u in host_split.REFERENCE_LAUNCH_US}
    return {u: x for u, x in got.items() if x is not None}


def projected_speedups(points: pd.DataFrame) -> pd.DataFrame:
    """Per ok non-eager point: (run_id, mode, batch_size) and one column per reference
    launch cost, 'at 5 us', ... (NaN where it cannot be projected)."""
    cols = [f"at {u:g} us" for u in host_split.REFERENCE_LAUNCH_US]
    ok = usable(points)
    if ok.empty:
        return pd.DataFrame(columns=["run_id", "mode", "batch_size", *cols])
    eager = {(r["run_id"], int(r["batch_size"])): point_record(r)
             for _, r in ok[ok["mode"] == "eager"].iterrows()}
    rows = []
    for _, r in ok[ok["mode"] != "eager"].iterrows():
        got = speedups_at_launch(point_record(r), eager.get((r["run_id"],
                                                             int(r["batch_size"]))))
        rows.append({"run_id": r["run_id"], "mode": r["mode"],
                     "batch_size": int(r["batch_size"]),
                     **{f"at {u:g} us": got.get(u) for u in host_split.REFERENCE_LAUNCH_US}})
    return pd.DataFrame(rows, columns=["run_id", "mode", "batch_size", *cols])


def judged_text(m: Measurement) -> str | None:
    """What `noisy` was judged on, e.g. 'host-normalised: ±6.1% (target ±10%)'; None
    where the runner did not say (bundles before version 6)."""
    on = m.intervals.judged_on
    half = number_or_none(m.intervals.judged_half_width)
    target = number_or_none(m.intervals.target_half_width)
    if not on and half is None:
        return None
    text = str(on or "the figure")
    if half is not None:
        text += f": ±{half:.1%}"
    if target is not None:
        text += f" (target ±{target:.1%})"
    return text
