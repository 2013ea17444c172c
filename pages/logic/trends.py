"""The Trends page's logic: one workload, parameter set and GPU over torch versions and
dates. Reading the query string (one clear line per bad value), grouping runs by parameter
set, ordering them by torch version then date, and marking each change against the
previous run with Compare's verdict (faster / slower / within noise) from the two speedup
intervals. The chart is pages/charts/trend_chart.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from contract import noise
from contract import verdict as vd
from contract.comparability import header_params, value_text
from contract.limits import MAX_BATCH_SIZE
from contract.measurement import Measurement
from contract.numbers import number_or_none
from contract.run_summary import RunHeader, RunListing, RunSummary
from contract.speedups import Speedup, speedups, usable
from contract.vocab import ALTERNATIVE_MODES, MODES
from pages.logic import timeline
from pages.logic.comparing import RunPoints
from pages.logic.run_text import torch_text
from runner.history.series import ORDERS, machine_key, machine_text, order_runs

MAX_BATCHES = 8  # more panels than this are not read


class TrendQueryError(ValueError):
    """A query-string value that cannot be used. str() is the one line shown."""


@dataclass(frozen=True)
class TrendQuery:
    workload: str | None
    gpu: str | None
    params: str | None
    batches: tuple[int, ...]
    modes: tuple[str, ...]
    order: str = "torch"
    machine: str | None = None  # a machine_text, MIXED, or None: the one with most runs


# What a Trends URL may ask. parse_query is handed every one of them (one not in the URL
# as no values), so a misspelt key is an error here, not a query silently ignored.
QUERY_KEYS = ("workload", "gpu", "params", "batch", "mode", "order", "machine")


def _one(params: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = [v for v in params[name] if v is not None]
    if len(values) > 1:
        raise TrendQueryError(f"?{name}= is given {len(values)} times: a trend follows one "
                              f"{name}")
    return values[0] if values else None


def parse_batch(text: str) -> int:
    """A batch size from the URL, by the one check every ?batch= has (timeline.py's,
    within contract/limits.py MAX_BATCH_SIZE); here every measured size is allowed."""
    s = str(text).strip()
    try:
        found = timeline.parse_batch(s, range(1, MAX_BATCH_SIZE + 1))
    except timeline.BatchError as e:
        raise TrendQueryError(str(e)) from None
    if found is None:
        raise TrendQueryError(f"?batch={s[:40]!r} is not a batch size: expected a whole "
                              "number in ASCII digits, such as ?batch=8")  # empty
    return found


def parse_query(params: Mapping[str, Sequence[str]], workloads: Sequence[str],
                gpus: Sequence[str]) -> TrendQuery:
    """The view a URL asks for; TrendQueryError names the first bad value. `params` maps
    each of QUERY_KEYS to its values (streamlit's get_all)."""
    workload = _one(params, "workload")
    if workload is not None and workload not in workloads:
        raise TrendQueryError(f"?workload={workload[:40]!r} has no run here: choose one of "
                              f"{', '.join(workloads) or 'none (no runs yet)'}")
    gpu = _one(params, "gpu")
    if gpu is not None and gpu not in gpus:
        raise TrendQueryError(f"?gpu={gpu[:40]!r} has no run here: choose one of "
                              f"{', '.join(gpus) or 'none (no runs yet)'}")
    batches = []
    for raw in params["batch"]:
        for part in str(raw).split(","):
            b = parse_batch(part)
            if b not in batches:
                batches.append(b)
    if len(batches) > MAX_BATCHES:
        raise TrendQueryError(f"{len(batches)} batch sizes asked for: a trend shows at most "
                              f"{MAX_BATCHES}")
    modes = []
    for m in params["mode"]:
        if m not in ALTERNATIVE_MODES:
            raise TrendQueryError(f"?mode={str(m)[:40]!r} is not a mode with a speedup: "
                                  f"choose one of {', '.join(ALTERNATIVE_MODES)}")
        if m not in modes:
            modes.append(m)
    order = _one(params, "order") or "torch"
    if order not in ORDERS:
        raise TrendQueryError(f"?order={order[:40]!r} is not an order: choose one of "
                              f"{', '.join(ORDERS)}")
    return TrendQuery(workload, gpu, _one(params, "params"), tuple(sorted(batches)),
                      tuple(modes), order, _one(params, "machine"))


def param_key(run: RunHeader) -> str:
    """A run's parameter set as text: its workload parameters and dtype. A parameter the
    runner stored as None (taken from the model's config: "heads=None") says nothing to a
    reader and is left out, as on the Runs board (board.known_params)."""
    params = header_params(run)
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if v is not None}
    return f"{value_text(params)} · {value_text(run.dtype)}"


def param_sets(runs: Sequence[RunHeader]) -> dict[str, list[int]]:
    """Parameter set -> run ids, the set with the most runs first."""
    sets: dict[str, list[int]] = {}
    for r in runs:
        sets.setdefault(param_key(r), []).append(r.id)
    return dict(sorted(sets.items(), key=lambda kv: -len(kv[1])))


# A series is one machine's runs (GPU, host CPU, driver: runner/history/series.py
# machine_key) unless the reader asks to mix them (issue 47): a launch-bound step is the
# host's as much as the GPU's, and a run of another host read as a torch change.
MIXED = "all machines (mixed)"


def machine_of(h: RunHeader) -> str:
    """The machine a run measured on, as machine_text names it."""
    return machine_text(machine_key({"gpu_name": h.gpu_name, "cpu_model": h.cpu_model,
                                     "driver_version": h.driver_version}))


def machines(runs: Sequence[RunHeader]) -> dict[str, list[int]]:
    """Machine (as machine_text names it) -> run ids, the machine with the most runs
    first, then the one that ran most recently."""
    groups: dict[str, list[int]] = {}
    newest: dict[str, float] = {}
    for h in runs:
        name = machine_of(h)
        groups.setdefault(name, []).append(h.id)
        when = h.created_at.timestamp() if h.created_at is not None else 0.0
        newest[name] = max(newest.get(name, when), when)
    return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), -newest[kv[0]])))


def machine_runs(runs: Sequence[RunHeader], asked: str | None
                 ) -> tuple[str, list[RunHeader], dict[str, list[int]]]:
    """(the machine shown, its runs, the other machines' run ids): the asked machine
    where it is one of these runs' (or MIXED: every run), else the one with the most.
    The others are named on the page, apart."""
    groups = machines(runs)
    if asked == MIXED or len(groups) <= 1:
        return (MIXED if len(groups) > 1 else next(iter(groups), MIXED)), list(runs), {}
    shown = asked if asked in groups else next(iter(groups))
    others = {m: ids for m, ids in groups.items() if m != shown}
    return shown, [h for h in runs if h.id in groups[shown]], others


ORDERED_COLUMNS = ["id", "torch_version", "created_at", "source", "run", "order"]


def ordered_runs(runs: Sequence[RunHeader], by: str = "torch") -> pd.DataFrame:
    """Runs in the series' order (runner/history's: by torch version then date, or by
    date, or by run id), with a short unique label each: the frame runner/history's change
    points read (its edge)."""
    if not runs:
        return pd.DataFrame(columns=ORDERED_COLUMNS)
    frame = pd.DataFrame([{"id": r.id, "torch_version": r.torch_version,
                           "created_at": r.created_at, "source": r.source} for r in runs])
    out = order_runs(frame, by)
    headers = {r.id: r for r in runs}  # (a published run may name no torch version)
    out["run"] = [f"{torch_text(headers[int(r['id'])])} · "
                  f"{r['created_at']:%Y-%m-%d} · #{int(r['id'])}"
                  + (" (published)" if r["source"] == "published" else "")
                  for _, r in out.iterrows()]
    return out[ORDERED_COLUMNS]


def measured_batches(points: RunPoints) -> list[int]:
    return sorted({m.batch_size for pts in points.values() for m in usable(pts)})


def measured_modes(points: RunPoints) -> list[str]:
    """The alternative modes (not eager) some run of the series measured a speedup in,
    in the modes' order: a CPU series has compile only."""
    have = {s.mode for pts in points.values() for s in speedups(pts)}
    return [m for m in ALTERNATIVE_MODES if m in have]


def default_batches(points: RunPoints, limit: int = 3) -> list[int]:
    """The batch sizes most runs measured: smallest, middle and largest of them."""
    per: dict[int, set[int]] = {}
    for rid, pts in points.items():
        for m in usable(pts):
            per.setdefault(m.batch_size, set()).add(rid)
    if not per:
        return []
    most = max(len(r) for r in per.values())
    common = sorted(b for b, r in per.items() if len(r) == most)
    if len(common) <= limit:
        return common
    return sorted({common[0], common[len(common) // 2], common[-1]})


# A 95% low of 0 is no bound: with three processes the runner's interval is the mean of
# their medians +- t(2) = 4.3 standard errors, and where the processes' step times lie far
# apart (a shared CPU) that runs below 0 ms and is clamped there (runner/core/stats.py,
# clustered_interval). A speedup over such a step then has a low of 0.00x: shown as none.
OPEN_BELOW = vd.OPEN_BELOW
OPEN_BELOW_NOTE = (
    "95% low '—' (" + OPEN_BELOW + "): the run's processes measured step times so far "
    "apart that the step-time interval ran below 0 ms (mean of the process medians +- 4.3 "
    "standard errors with three processes) and was clamped at 0; the speedup then has no "
    "lower bound, only an upper one, and its bar runs to the bottom of the chart.")


def bound(low: float | None) -> float | None:
    """A speedup's (or ratio's) 95% low as a bound: None where it is 0 or below."""
    return None if low is None or low <= 0 else low


def _change(cur: Speedup, prev: Speedup) -> tuple[str, str]:
    interval = noise.ratio_interval(cur.ci_low, cur.ci_high, prev.ci_low, prev.ci_high)
    verdict = noise.ratio_verdict(interval)
    ratio = cur.speedup / prev.speedup if prev.speedup else float("nan")
    if interval is None:
        return verdict, verdict
    # The Run page's rule (contract/verdict.py): '≤4.90x, no lower bound' where the low
    # end is 0 or below.
    return verdict, f"{verdict} ({ratio:.2f}x; {vd.interval_text(*interval)})"


TREND_COLUMNS = ["run", "order", "run_id", "torch", "date", "mode", "batch_size", "speedup",
                 "speedup_ci_low", "speedup_ci_high", "change", "change vs previous",
                 "energy_mj_per_step", "energy_gain"]
ENERGY_TREND_COLUMNS = ("energy_mj_per_step", "energy_gain")
# The columns the page shows (the energy ones apart): the run's name holds its torch
# version, date and id.
SHOWN_TREND_COLUMNS = ["run", "mode", "batch_size", "speedup", "speedup_ci_low",
                       "speedup_ci_high", "change vs previous"]


def _trend_row(s: Speedup, info: pd.Series, rid: int) -> dict[str, object]:
    m: Measurement = s.point
    return {"run": info["run"], "order": info["order"], "run_id": rid,
            "torch": value_text(info["torch_version"]),
            "date": f"{info['created_at']:%Y-%m-%d}", "mode": s.mode,
            "batch_size": s.batch_size, "speedup": s.speedup,
            "speedup_ci_low": bound(s.ci_low),
            "speedup_ci_high": s.ci_high,
            # Energy where the run measured it (bundle version 5): NaN, never 0, elsewhere.
            "energy_mj_per_step": number_or_none(m.energy.energy_mj_per_step),
            "energy_gain": number_or_none(m.energy.energy_gain)}


def trend_table(runs: Sequence[RunHeader], points: RunPoints, batches: Sequence[int],
                modes: Sequence[str], by: str = "torch") -> pd.DataFrame:
    """One row per (run, mode, batch): the speedup with its interval, and how it changed
    against the previous run in order with a figure at that (mode, batch): 'faster' /
    'slower' when the ratio's interval lies wholly above / below 1, else 'within noise',
    or 'inconclusive' where it spans more than the verdict rule allows
    (contract/verdict.py; 'first' for the first run, 'no interval' where either side
    has none). The table's frame (and the trend chart's)."""
    order = ordered_runs(runs, by)
    info = order.set_index(order["id"].astype(int)) if len(order) else order
    found = sorted(((int(info.at[rid, "order"]), rid, s) for rid, pts in points.items()
                    if rid in info.index for s in speedups(pts)
                    if s.mode in modes and s.batch_size in batches),
                   key=lambda x: (x[2].mode, x[2].batch_size, x[0]))
    rows, prev = [], None
    for _, rid, s in found:
        row = _trend_row(s, info.loc[rid], rid)
        if prev is None or (prev.mode, prev.batch_size) != (s.mode, s.batch_size):
            row["change"], row["change vs previous"] = "first", "first run"
        else:
            row["change"], row["change vs previous"] = _change(s, prev)
        rows.append(row)
        prev = s
    rank = {m: i for i, m in enumerate(MODES)}
    rows.sort(key=lambda r: (r["batch_size"], rank.get(str(r["mode"]), 99), r["order"]))
    return pd.DataFrame(rows, columns=TREND_COLUMNS)


def changes(table: pd.DataFrame) -> pd.DataFrame:
    """The rows whose change lies outside the noise."""
    return table[table["change"].isin(["faster", "slower"])]


def default_view(runs: Sequence[RunListing], workload: str | None = None
                 ) -> tuple[str, str] | None:
    """The (workload, GPU) a Trends page opens at when the URL names none: the one whose
    largest parameter set has the most sweeps (a trend needs two; the first workload
    alphabetically may have one), then the newest; `workload` fixes the workload when the
    URL gives only that. None when there is no sweep."""
    per = series(runs)
    if workload is not None:
        per = per[per["workload"] == workload]
    if per.empty:
        return None
    return str(per.iloc[0]["workload"]), str(per.iloc[0]["gpu"])


# What a trend needs, in the words the page says when a series has fewer.
TREND_NEEDS = ("a trend needs two or more runs of the same workload on this GPU (with the "
               "same parameters and dtype)")


def _gpu(h: RunHeader) -> str:
    return h.gpu_name or "cpu"


def series(runs: Sequence[RunListing]) -> pd.DataFrame:
    """Every series (workload, GPU, parameter set) with its number of sweeps, the most
    runs first, then the newest (a table's frame)."""
    cols = ["workload", "gpu", "params", "runs"]
    per: dict[tuple[str, str, str], list[RunHeader]] = {}
    for r in runs:
        h = r.header
        if h.kind == "sweep":
            per.setdefault((h.workload, _gpu(h), param_key(h)), []).append(h)
    if not per:
        return pd.DataFrame(columns=cols)
    rows = sorted(per.items(), key=lambda kv: (
        -len(kv[1]), -max((h.created_at.timestamp() if h.created_at else 0) for h in kv[1])))
    return pd.DataFrame([{"workload": w, "gpu": g, "params": p, "runs": len(hs)}
                         for (w, g, p), hs in rows], columns=cols)


def trend_series(runs: Sequence[RunListing]) -> pd.DataFrame:
    """The series a trend can be drawn for: two runs or more."""
    s = series(runs)
    return s[s["runs"] >= 2].reset_index(drop=True)


SINGLE_COLUMNS = ["run_id", "run", "mode", "batch_size", "speedup", "speedup_ci_low",
                  "speedup_ci_high", "figure"]


def single_runs(summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """Each sweep as one point when no series has two runs: its key figure (the run
    summary's, as the board quotes it), labelled by workload, GPU and id. Runs without a
    key figure are left out."""
    rows = []
    for s in summaries:
        k, h = s.key, s.header
        if k is None or h.kind != "sweep":
            continue
        rows.append({"run_id": h.id, "run": f"{h.workload} · {_gpu(h)} · #{h.id}",
                     "mode": k.mode, "batch_size": k.batch_size, "speedup": k.speedup,
                     "speedup_ci_low": k.ci_low, "speedup_ci_high": k.ci_high,
                     "figure": s.speedup_text()})
    return pd.DataFrame(rows, columns=SINGLE_COLUMNS)
