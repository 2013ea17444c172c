"""What Compare adds beside the curves: which runs report another statistic than the
runner's median, and memory side by side. Pure pandas, like pages.logic.analysis."""

from __future__ import annotations

import pandas as pd

from pages.logic import analysis, cost
from runner.format.measurement import details_of

RUNNER_STATISTIC = "median"


def _statistic(details) -> str | None:
    said = details_of(details).source.statistic
    return str(said) if said else None


def statistic_flags(headers: pd.DataFrame, points: pd.DataFrame) -> list[str]:
    """One line per run whose points give another statistic than the runner's median
    (the published article gives means of CUDA-event timings): its times and ratios are
    not quite like for like with a measured run's."""
    lines = []
    names = analysis.run_names(headers)
    for rid in names:
        own = points[points["run_id"] == rid] if not points.empty else points
        stats = {_statistic(d) for d in (own["details"] if "details" in own else [])}
        stats.discard(None)
        other = sorted(s for s in stats if not s.lower().startswith(RUNNER_STATISTIC))
        if other:
            lines.append(f"{names[rid]} gives {other[0].split(',')[0]}, not medians as "
                         "launchbench measures: its times and ratios differ in statistic, "
                         "not only in hardware.")
    return lines


def memory_table(points: pd.DataFrame, headers: pd.DataFrame) -> pd.DataFrame:
    """Per (mode, batch): each run's memory held (graph pool + peak allocated, MiB), side
    by side; only (mode, batch) pairs some run measured memory at. Empty when no run has
    memory figures (CPU runs, published figures)."""
    return _side_by_side(cost.memory_cost(points), headers, "total_mib", "MiB")


def energy_table(points: pd.DataFrame, headers: pd.DataFrame) -> pd.DataFrame:
    """Per (mode, batch): each run's energy per step (mJ), side by side; only pairs some
    run measured energy at. Empty when no run has energy figures (CPU runs, runs from
    before bundle version 5, --no-energy)."""
    e = points[points["energy_mj_per_step"].notna()] if "energy_mj_per_step" in points \
        else points.iloc[0:0]
    e = analysis.usable(e)
    return _side_by_side(e, headers, "energy_mj_per_step", "mJ")


def _side_by_side(c: pd.DataFrame, headers: pd.DataFrame, value: str,
                  unit: str) -> pd.DataFrame:
    if c.empty:
        return pd.DataFrame(columns=["mode", "batch_size"])
    names = analysis.run_names(headers)
    wide = c.pivot_table(index=["mode", "batch_size"], columns="run_id", values=value,
                         aggfunc="first")
    out = pd.DataFrame(index=wide.index)
    for rid, name in names.items():
        out[f"{name} {unit}"] = wide[rid] if rid in wide else float("nan")
    out = out.reset_index()
    key = out["mode"].map(analysis.MODE_ORDER)
    return (out.assign(_k=key).sort_values(["_k", "batch_size"]).drop(columns="_k")
            .reset_index(drop=True))


def _joined(lines: list[str], prefix: str) -> str:
    """Lines that each start with `prefix` as one: the prefix once, their rest joined."""
    rest = [line[len(prefix):].rstrip(".") if line.startswith(prefix) else line.rstrip(".")
            for line in lines]
    return prefix + "; ".join(rest) + "."


def caveats(headers: pd.DataFrame, points: pd.DataFrame) -> list[tuple[str, str]]:
    """What a reader must know before reading the curves, one (kind, line) per distinct
    reason (kind: "warning" or "info"): five banners, one per field and run, pushed the
    chart below the fold on a three-GPU comparison."""
    out: list[tuple[str, str]] = []
    differ = analysis.comparability(headers)
    if differ:
        out.append(("warning", _joined(differ, "Not comparable: ")[:-1]
                    + ": the curves measure different things."))
    # Published runs and the statistic they give are one reason told once: what the
    # figures are, and how that differs from a launchbench measurement.
    names = analysis.run_names(headers)
    gives = {}
    for line in statistic_flags(headers, points):
        name, what = line.split(" gives ", 1)
        gives[name] = what.split(", not medians")[0]
    published = [names[int(i)] for i in headers.loc[headers["source"] == "published", "id"]
                 if int(i) in names]
    told = [f"{n} gives {gives[n]}" if n in gives else n
            for n in dict.fromkeys([*published, *gives])]
    if gives:
        out.append(("warning", f"Published, not measured here: {'; '.join(told)}; not "
                               "medians as launchbench measures: their times and ratios "
                               "differ in statistic, not only in hardware."))
    elif told:
        out.append(("info", f"Published figures from the cited articles, not measured "
                            f"here: {', '.join(told)}."))
    return out
