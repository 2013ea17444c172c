"""Several runs side by side (the Compare page): series names, whether the runs measure
the same thing, speedups overlaid, each run against a baseline with the verdict of the
ratio, environment differences, runs reporting another statistic than the runner's
median, and memory and energy side by side. Pure pandas, like analysis.py."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from contract.bundle import ENVIRONMENT_FIELDS
from contract.measurement import details_of
from contract.numbers import is_missing, number_or_none
from contract.run_summary import RunHeader, header_of
from pages.logic import analysis, cost
from pages.logic.analysis import MODE_ORDER, numeric_column, speedups, usable
from pages.logic.names import device_name, known
from pages.logic.noise import launch_cost, ratio_interval, ratio_verdict
from pages.logic.plain import MAX_CELL, cut

RUNNER_STATISTIC = "median"


def _statistic(details) -> str | None:
    said = details_of(details).source.statistic
    return str(said) if said else None


def statistic_flags(headers: pd.DataFrame, points: pd.DataFrame) -> list[str]:
    """One line per run whose points give another statistic than the runner's median
    (the published article gives means of CUDA-event timings): its times and ratios are
    not quite like for like with a measured run's."""
    lines = []
    names = run_names(headers)
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
    names = run_names(headers)
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
    differ = comparability(headers)
    if differ:
        out.append(("warning", _joined(differ, "Not comparable: ")[:-1]
                    + ": the curves measure different things."))
    # Published runs and the statistic they give are one reason told once: what the
    # figures are, and how that differs from a launchbench measurement.
    names = run_names(headers)
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


# What makes two runs' curves comparable: the same model at the same size and precision.
COMPARABLE_FIELDS = ("kind", "workload", "workload_params", "dtype")


def series_name(header: dict | pd.Series) -> str:
    """How a run is named in a comparison: GPU and torch version, marked when published."""
    h = header_of(header)
    gpu = device_name(h)
    torch = known(h.torch_version)
    name = f"{gpu} · torch {torch}" if torch else gpu
    if h.source == "published":
        name += " (published)"
    return name


def run_names(headers: pd.DataFrame) -> dict[int, str]:
    """Run id -> '#id GPU · torch', unique even when two runs share an environment."""
    return {int(h["id"]): f"#{int(h['id'])} {series_name(h)}" for _, h in headers.iterrows()}


def value_text(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={v[k]}" for k in sorted(v))
    if is_missing(v):
        return "—"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # a count that pandas widened to float beside a missing value
    return str(v)


def comparable_params(header: RunHeader) -> Any:
    """The workload parameters as compared. The runner records the dtype among them too;
    it is compared once, as dtype, so a bundle that leaves it out of its parameters still
    compares. Parameters are named by the workload (contract/params.py), so which
    are there is the workload's to say: a dtype among them is dropped unless it differs
    from the run's."""
    params = header.workload_params
    if not isinstance(params, dict):
        return params
    if "dtype" in params and params["dtype"] not in (None, header.dtype):
        return params
    return {k: v for k, v in params.items() if k != "dtype"}


def comparability(headers: pd.DataFrame) -> list[str]:
    """One warning line per field that differs between the runs (workload, parameters,
    dtype): their curves then measure different things."""
    warnings = []
    if len(headers) < 2:
        return warnings
    for field in COMPARABLE_FIELDS:
        values = {int(h["id"]): value_text(comparable_params(header_of(h))
                                           if field == "workload_params" else h[field])
                  for _, h in headers.iterrows()}
        if len(set(values.values())) > 1:
            # Each value cut to a cell's length: one 100,000-character parameter held the
            # whole page (the values in full: the runs' parameters download, Compare).
            listed = "; ".join(f"run {rid}: {cut(v, MAX_CELL)}" for rid, v in values.items())
            what = {"kind": "run kinds", "workload": "workloads",
                    "workload_params": "workload parameters", "dtype": "dtypes"}[field]
            warnings.append(f"Not comparable: {what} differ ({listed}).")
    return warnings


def long_params(headers: pd.DataFrame) -> dict[int, dict]:
    """The workload parameters of each run that has a value over MAX_CELL characters,
    which the pages cut: what the "in full" download on Compare and the Run page holds."""
    out = {}
    for _, h in headers.iterrows():
        params = header_of(h).workload_params or {}
        if any(len(str(v)) > MAX_CELL or len(str(k)) > MAX_CELL for k, v in params.items()):
            out[int(h["id"])] = dict(params)
    return out


def compare_speedups(points: pd.DataFrame, headers: pd.DataFrame) -> pd.DataFrame:
    """Speedups of several runs with each run's series name, for the overlay chart."""
    sp = speedups(points)
    names = run_names(headers)
    series = {int(h["id"]): series_name(h) for _, h in headers.iterrows()}
    # Two runs of one GPU and torch (a rerun, another day's host) would share a colour and
    # a legend entry: each is then its own series, named with its id.
    shared = {s for s, n in Counter(series.values()).items() if n > 1}
    series = {rid: names[rid] if s in shared else s for rid, s in series.items()}
    sp["run"] = sp["run_id"].map(names)
    sp["series"] = sp["run_id"].map(series)
    return sp


def ratio_table(points: pd.DataFrame, headers: pd.DataFrame,
                baseline: int | None = None) -> pd.DataFrame:
    """Per (mode, batch): each run's step time, and how many times faster each run is than
    the baseline run (baseline ms / run ms; > 1 means faster). Only (mode, batch) pairs
    that at least two runs measured are kept (a ratio needs two); a run without an ok
    point there keeps NaN."""
    ok = usable(points)
    if ok.empty or headers.empty:
        return pd.DataFrame(columns=["mode", "batch_size"])
    names = run_names(headers)
    ids = [int(i) for i in headers["id"]]
    base = ids[0] if baseline is None else int(baseline)
    ok = ok.assign(step_ms_ci_low=numeric_column(ok, "step_ms_ci_low"),
                   step_ms_ci_high=numeric_column(ok, "step_ms_ci_high"))
    every = ok.pivot_table(index=["mode", "batch_size"], columns="run_id",
                           values=["step_ms", "step_ms_ci_low", "step_ms_ci_high"],
                           aggfunc="first", dropna=False)
    wide = every["step_ms"]
    keep = wide.notna().sum(axis=1) >= 2
    wide = wide[keep]
    lows, highs = every["step_ms_ci_low"][keep], every["step_ms_ci_high"][keep]
    out = pd.DataFrame(index=wide.index)
    for rid in ids:
        out[f"{names[rid]} ms"] = wide[rid] if rid in wide else float("nan")
    for rid in ids:
        if rid == base:
            continue
        col = f"{names[rid]} vs #{base}"
        if rid in wide and base in wide:
            out[col] = wide[base] / wide[rid]
            out[f"{col} 95%"] = [
                _verdict_text(ratio_interval(lows.at[k, base], highs.at[k, base],
                                             lows.at[k, rid], highs.at[k, rid]), r)
                for k, r in zip(wide.index, out[col], strict=True)]
        else:
            out[col] = float("nan")
            out[f"{col} 95%"] = "—"
    # The answer first: ratios and their verdicts, then each run's own time, so the ratio
    # is on screen at 1280 px however many runs are compared.
    ms = [c for c in out.columns if c.endswith(" ms")]
    out = out[[c for c in out.columns if c not in ms] + ms].reset_index()
    key = out["mode"].map(MODE_ORDER)
    return (out.assign(_k=key).sort_values(["_k", "batch_size"]).drop(columns="_k")
            .reset_index(drop=True))


def _verdict_text(interval: tuple[float, float] | None, ratio: float) -> str:
    if number_or_none(ratio) is None:
        return "—"
    said = ratio_verdict(interval)
    if interval is None:
        return said
    return f"{said} ({interval[0]:.2f}-{interval[1]:.2f}x)"


LAUNCH_FIELD = "host launch cost (us, median and range)"


def environment_diff(headers: pd.DataFrame, only_differences: bool = True,
                     points: pd.DataFrame | None = None) -> pd.DataFrame:
    """Environment and workload fields side by side, one column per run. With
    `only_differences`, only the fields whose values are not all equal. Given the runs'
    points, a row for the host's launch cost too: it is a property of the host (CPU,
    driver), so two GPUs on different hosts differ in it as much as in the GPU."""
    fields = [*COMPARABLE_FIELDS, "source", *ENVIRONMENT_FIELDS]
    names = run_names(headers)
    launch = {}
    if points is not None:
        fields.append(LAUNCH_FIELD)
        for _, h in headers.iterrows():
            lc = launch_cost(points[points["run_id"] == h["id"]]) if not points.empty \
                else None
            launch[int(h["id"])] = lc.text() if lc else "—"
    rows = []
    for f in fields:
        values = [launch[int(h["id"])] if f == LAUNCH_FIELD else value_text(h.get(f))
                  for _, h in headers.iterrows()]
        differs = len(set(values)) > 1
        if differs or not only_differences:
            cells = dict(zip(names.values(), (cut(v, MAX_CELL) for v in values),
                             strict=True))
            rows.append({"field": f, **cells, "differs": differs})
    return pd.DataFrame(rows, columns=["field", *names.values(), "differs"])


# --- one rule for what can be compared (the Runs board and Compare both apply it) ------
#
# The board refused H200 + L40S + V100 ("workloads differ") while Compare drew the same
# three runs. The rule now: only another kind of run (serve, graph-memory) is refused,
# since it has no speedup curve to overlay; runs of different workloads, parameters or
# precision can be laid side by side (that is how a published figure is read against a
# measured one) but every page that offers or shows them says what differs.
OTHER_KIND = {"serve": "on the Serve page", "graph-memory": "on its own page"}


def compare_rule(headers: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for comparing these runs (rows of a runs or headers frame):
    a refusal per run that is not a sweep; a warning per field that makes the curves
    measure different things (comparability)."""
    if len(headers) < 2:
        return [], []
    runs = [header_of(r) for _, r in headers.iterrows()]
    refusals = [f"Run {int(h.id)} is a {h.kind} run: Compare overlays sweeps. Open "
                f"it {OTHER_KIND[h.kind]} instead." for h in runs if h.kind in OTHER_KIND]
    return refusals, comparability(headers)
