"""Runs on different GPUs side by side (the Compare page; issue 39 item 3, issue 37
"Comparing GPUs"): which of host, torch version and model size differ besides the GPU,
what of each step belongs to the GPU (its busy time) and what to the host (its launch
cost), the speedup at a common launch cost beside the measured one, and a published run
quoted by the figures it has. What may be compared at all is comparing.compare_rule.
Over records: the runs' headers and their points by run id."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from contract import host_split
from contract import verdict as vd
from contract.comparability import header_params, value_text
from contract.noise import launch_cost
from contract.numbers import number_or_none
from contract.run_summary import RunHeader
from contract.speedups import in_mode_order, speedups, usable
from pages.logic import step_split
from pages.logic.comparing import RunPoints, short_names
from pages.logic.names import device_name, known
from pages.logic.plain import MAX_CELL, cut
from pages.logic.step_split import PROJECTION_RULE


def _distinct(values: dict[int, str]) -> bool:
    return len(set(values.values())) > 1


def cross_gpu_differences(headers: Sequence[RunHeader], points: RunPoints | None = None
                          ) -> str | None:
    """On a comparison of different GPUs, the one line that says which of host, torch
    version and model size/parameters differ too (a ratio such as 8.87x between an H200
    and a published L40S is the GPU's and all of these at once); None for runs on one
    GPU."""
    if len(headers) < 2:
        return None
    runs = list(headers)
    gpus = {int(h.id): device_name(h) for h in runs}
    if not _distinct(gpus):
        return None
    said = []

    def host(h: RunHeader) -> str:
        known_host = known(h.cpu_model) or known(h.hostname)
        lc = launch_cost(points.get(h.id, ())) if points is not None else None
        text = str(known_host) if known_host else "not recorded"
        return f"{text}, launch {lc.text()}" if lc else text

    hosts = {int(h.id): host(h) for h in runs}
    if _distinct(hosts) or any("not recorded" in v for v in hosts.values()):
        said.append("host (" + "; ".join(f"#{i} {v}" for i, v in hosts.items()) + ")")
    # A published run names no torch: said in words, as the host's is ('—' read as a dash).
    torch = {int(h.id): str(h.torch_version) if known(h.torch_version) else "not recorded"
             for h in runs}
    if _distinct(torch):
        said.append("torch version (" + ", ".join(f"#{i} {v}" for i, v in torch.items())
                    + ")")
    model = {int(h.id): cut(f"{h.workload} {value_text(header_params(h))}", MAX_CELL)
             for h in runs}
    if _distinct(model):
        said.append("model size/params (" + "; ".join(f"#{i} {v}" for i, v in model.items())
                    + ")")
    same = [w for w, d in (("host", "host (" in " ".join(said)),
                           ("torch version", _distinct(torch)),
                           ("model size/params", _distinct(model))) if not d]
    line = ("Across GPUs, a ratio is not the GPU's alone: these runs also differ in "
            + ("; ".join(said) if said else "nothing else recorded") + ".")
    if same:
        line += f" Same {', '.join(same)}."
    return line


# A graph mode's step is the GPU's when its GPU busy time is at least this share of it.
GPU_BOUND_SHARE = 0.8
# Short: a 45-character cell pushed the GPU and host table past the page at 1280 px.
NOT_NORMALISED = "no launch cost"


def normalise_rule(at_us: float) -> str:
    """The assumption behind a speedup at a common launch cost, in words."""
    return (f"Speedup at {at_us:g} us a launch: as if every run's host launched a kernel "
            f"in {at_us:g} us; {PROJECTION_RULE}. A run without a measured launch cost "
            "(published figures) cannot be normalised.")


def _measured(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def gpu_host_table(points: RunPoints, headers: Sequence[RunHeader],
                   at_us: float = 10.0) -> pd.DataFrame:
    """Per run, mode and batch size: what belongs to the GPU (GPU busy a step; a graph
    mode's step marked GPU-bound where the GPU is busy GPU_BOUND_SHARE of it), what to the
    host (its launch cost), and the measured speedup beside the one at a common launch
    cost `at_us` (one of host_split.REFERENCE_LAUNCH_US)."""
    # The answer first (both speedups), so it is on screen at 1280 px.
    cols = ["run", "mode", "batch", "speedup (measured)", f"speedup at {at_us:g} us",
            "GPU busy ms", "GPU share", "launch cost us"]
    names = short_names(headers)
    rows = []
    for h in headers:
        pts = points.get(h.id, [])
        found = {(s.mode, s.batch_size): s for s in speedups(pts)}
        at = step_split.projected_speedups(pts)
        for m in in_mode_order(usable(pts)):
            key = (m.mode, m.batch_size)
            busy = number_or_none(m.launches.gpu_busy_ms)
            split = host_split.point_split(m)
            launch = number_or_none(m.intervals.launch_us)
            measured = at_here = "—"
            if m.mode != "eager":
                if key in found:
                    s = found[key]
                    measured = vd.quoted(s.speedup, s.ci_low, s.ci_high)
                at_here = (NOT_NORMALISED if launch is None
                           else _measured(at.get(key, {}).get(float(at_us))))
            share_text = "—" if split is None else f"{split.share('gpu'):.0%}"
            if split is not None and m.mode != "eager" \
                    and split.share("gpu") >= GPU_BOUND_SHARE:
                share_text += " GPU-bound"
            rows.append({"run": names[h.id], "mode": m.mode, "batch": m.batch_size,
                         "GPU busy ms": "—" if busy is None else f"{busy:.3f}",
                         "GPU share": share_text,
                         "launch cost us": "—" if launch is None else f"{launch:.1f}",
                         "speedup (measured)": measured, f"speedup at {at_us:g} us": at_here})
        if not usable(pts):
            # A run with no point to split (the published V100 has per-kernel figures
            # only) still gets its row: it cannot be normalised either.
            lc = launch_cost(pts)
            rows.append({"run": names[h.id], "mode": "—", "batch": None, "GPU busy ms": "—",
                         "GPU share": "—", "launch cost us": "—" if lc is None else lc.text(),
                         "speedup (measured)": "no step time",
                         f"speedup at {at_us:g} us": "—" if lc else NOT_NORMALISED})
    return pd.DataFrame(rows, columns=cols)


def key_figures_per_kernel(key: pd.DataFrame, per_kernel: pd.DataFrame) -> pd.DataFrame:
    """The key-figure table with a run that has no step time but per-kernel figures (the
    published V100 blog) quoted by those: "no speedup measured" beside a per-kernel table
    listing its cuda-graph row read as two answers about one run."""
    if key.empty or per_kernel.empty:
        return key
    out = key.copy()
    for i, row in out.iterrows():
        # The same run by its '#id' (the key table names it whole, the per-kernel one short).
        mine = per_kernel[per_kernel["run"].str.split(" ").str[0]
                          == str(row["run"]).split(" ")[0]]
        eager = mine[mine["mode"] == "eager"]
        if eager.empty or number_or_none(mine["step us"].max()) is not None:
            continue
        parts = []
        for _, g in mine[mine["mode"] != "eager"].iterrows():
            e = eager[eager["batch (elements)"] == g["batch (elements)"]]
            a, b = number_or_none(g["per kernel us"]), (
                number_or_none(e["per kernel us"].iloc[0]) if len(e) else None)
            if a and b:
                parts.append(f"{g['mode']}: {a:g} us a kernel against eager's {b:g} us "
                             f"({b / a:.2f}x; no step time: see Per kernel)")
        if parts:
            out.at[i, "key figure"] = "; ".join(parts)
    return out
