"""The Trends page's logic: one workload, parameter set and GPU over torch versions and
dates. Reading the query string (one clear line per bad value), grouping runs by parameter
set, ordering them by torch version then date, and marking each change against the
previous run with Compare's verdict (faster / slower / within noise) from the two speedup
intervals. The chart is pages/charts/trend_chart.py's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from contract.run_summary import header_of
from contract.vocab import ALTERNATIVE_MODES
from pages.logic import analysis, comparing, noise
from runner.history.series import ORDERS, machine_key, machine_text, order_runs

MAX_BATCH = 2**31 - 1
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
    """A batch size from the URL: ASCII digits only (no '８', no '1e3', no sign)."""
    s = str(text).strip()
    if not s or not re.fullmatch(r"[0-9]{1,10}", s):
        raise TrendQueryError(f"?batch={s[:40]!r} is not a batch size: expected a whole "
                              "number in ASCII digits, such as ?batch=8")
    value = int(s)
    if not 1 <= value <= MAX_BATCH:
        raise TrendQueryError(f"?batch={s!r} is out of range: batch sizes run from 1 to "
                              f"{MAX_BATCH:,}")
    return value


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


def param_key(run: Mapping) -> str:
    """A run's parameter set as text: its workload parameters and dtype."""
    h = header_of(run)
    p = comparing.value_text(comparing.comparable_params(h))
    return f"{p} · {comparing.value_text(h.dtype)}"


def param_sets(runs: pd.DataFrame) -> dict[str, list[int]]:
    """Parameter set -> run ids, the set with the most runs first."""
    sets: dict[str, list[int]] = {}
    for _, r in runs.iterrows():
        sets.setdefault(param_key(r), []).append(int(r["id"]))
    return dict(sorted(sets.items(), key=lambda kv: -len(kv[1])))


# A series is one machine's runs (GPU, host CPU, driver: runner/history/series.py
# machine_key) unless the reader asks to mix them (issue 47): a launch-bound step is the
# host's as much as the GPU's, and a run of another host read as a torch change.
MIXED = "all machines (mixed)"


def machines(runs: pd.DataFrame) -> dict[str, list[int]]:
    """Machine (as machine_text names it) -> run ids, the machine with the most runs
    first, then the one that ran most recently."""
    if runs.empty:
        return {}
    groups: dict[str, list[int]] = {}
    newest: dict[str, pd.Timestamp] = {}
    for _, r in runs.iterrows():
        name = machine_text(machine_key(r))
        groups.setdefault(name, []).append(int(r["id"]))
        when = pd.Timestamp(r["created_at"])
        newest[name] = max(newest.get(name, when), when)
    return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), -newest[kv[0]].value)))


def machine_runs(runs: pd.DataFrame, asked: str | None) -> tuple[str, pd.DataFrame, dict]:
    """(the machine shown, its runs, the other machines' run ids): the asked machine
    where it is one of these runs' (or MIXED: every run), else the one with the most.
    The others are named on the page, apart."""
    groups = machines(runs)
    if asked == MIXED or len(groups) <= 1:
        return (MIXED if len(groups) > 1 else next(iter(groups), MIXED)), runs, {}
    shown = asked if asked in groups else next(iter(groups))
    others = {m: ids for m, ids in groups.items() if m != shown}
    return shown, runs[runs["id"].astype(int).isin(groups[shown])], others


def ordered_runs(runs: pd.DataFrame, by: str = "torch") -> pd.DataFrame:
    """Runs in the series' order (runner/history's: by torch version then date, by date,
    or by run id), with a short unique label each."""
    if runs.empty:
        return runs.assign(order=[], run=[])
    out = order_runs(runs, by)
    out["run"] = [f"torch {comparing.value_text(r['torch_version'])} · "
                  f"{r['created_at']:%Y-%m-%d} · #{int(r['id'])}"
                  + (" (published)" if r["source"] == "published" else "")
                  for _, r in out.iterrows()]
    return out


def measured_batches(points: pd.DataFrame) -> list[int]:
    return sorted({int(b) for b in analysis.usable(points)["batch_size"]}) \
        if not points.empty else []


def default_batches(points: pd.DataFrame, limit: int = 3) -> list[int]:
    """The batch sizes most runs measured: smallest, middle and largest of them."""
    ok = analysis.usable(points)
    if ok.empty:
        return []
    per = ok.groupby("batch_size")["run_id"].nunique()
    common = sorted(int(b) for b in per[per == per.max()].index)
    if len(common) <= limit:
        return common
    return sorted({common[0], common[len(common) // 2], common[-1]})


def _change(cur_low, cur_high, prev_low, prev_high, cur, prev) -> tuple[str, str]:
    interval = noise.ratio_interval(cur_low, cur_high, prev_low, prev_high)
    verdict = noise.ratio_verdict(interval)
    ratio = cur / prev if prev and prev == prev else float("nan")
    text = verdict if interval is None else \
        f"{verdict} ({ratio:.2f}x; {interval[0]:.2f}-{interval[1]:.2f}x)"
    return verdict, text


TREND_COLUMNS = ["run", "order", "run_id", "torch", "date", "mode", "batch_size", "speedup",
                 "speedup_ci_low", "speedup_ci_high", "change", "change vs previous",
                 "energy_mj_per_step", "energy_gain"]
ENERGY_TREND_COLUMNS = ("energy_mj_per_step", "energy_gain")


def trend_table(runs: pd.DataFrame, points: pd.DataFrame, batches: Sequence[int],
                modes: Sequence[str], by: str = "torch") -> pd.DataFrame:
    """One row per (run, mode, batch): the speedup with its interval, and how it changed
    against the previous run in order with a figure at that (mode, batch): 'faster' /
    'slower' when the ratio's interval lies wholly above / below 1, else 'within noise',
    or 'inconclusive' where it spans more than the verdict rule allows
    (contract/verdict.py; 'first' for the first run, 'no interval' where either side
    has none)."""
    sp = analysis.speedups(points)
    sp = sp[sp["mode"].isin(list(modes)) & sp["batch_size"].isin(list(batches))]
    order = ordered_runs(runs, by)
    if sp.empty or order.empty:
        return pd.DataFrame(columns=TREND_COLUMNS)
    info = order.set_index(order["id"].astype(int))
    sp = sp.assign(run_id=sp["run_id"].astype(int))
    sp = sp[sp["run_id"].isin(info.index)]
    sp["order"] = sp["run_id"].map(info["order"])
    sp["run"] = sp["run_id"].map(info["run"])
    sp["torch"] = sp["run_id"].map(info["torch_version"]).map(comparing.value_text)
    sp["date"] = sp["run_id"].map(info["created_at"]).dt.strftime("%Y-%m-%d")
    sp = sp.sort_values(["mode", "batch_size", "order"]).reset_index(drop=True)
    verdicts, texts = [], []
    prev = None
    for _, r in sp.iterrows():
        if prev is None or (prev["mode"], prev["batch_size"]) != (r["mode"], r["batch_size"]):
            verdicts.append("first")
            texts.append("first run")
        else:
            v, t = _change(r["speedup_ci_low"], r["speedup_ci_high"], prev["speedup_ci_low"],
                           prev["speedup_ci_high"], r["speedup"], prev["speedup"])
            verdicts.append(v)
            texts.append(t)
        prev = r
    sp["change"] = verdicts
    sp["change vs previous"] = texts
    # Energy where the run measured it (bundle version 5): NaN, never 0, elsewhere.
    keys = list(zip(points["run_id"].astype(int), points["mode"],
                    points["batch_size"].astype(int), strict=True))
    for c in ENERGY_TREND_COLUMNS:
        by_point = dict(zip(keys, analysis.numeric_column(points, c), strict=True))
        sp[c] = [by_point.get((int(r), m, int(b)), float("nan")) for r, m, b in
                 zip(sp["run_id"], sp["mode"], sp["batch_size"], strict=True)]
    key = sp["mode"].map(analysis.MODE_ORDER)
    return (sp.assign(_k=key).sort_values(["batch_size", "_k", "order"]).drop(columns="_k")
            .reset_index(drop=True)[TREND_COLUMNS])


def changes(table: pd.DataFrame) -> pd.DataFrame:
    """The rows whose change lies outside the noise."""
    return table[table["change"].isin(["faster", "slower"])]


def default_view(runs: pd.DataFrame, workload: str | None = None) -> tuple[str, str] | None:
    """The (workload, GPU) a Trends page opens at when the URL names none: the one whose
    largest parameter set has the most sweeps (a trend needs two; the first workload
    alphabetically may have one), then the newest; `workload` fixes the workload when the
    URL gives only that. `runs` is the runs frame (kind, workload, gpu_name, workload_params,
    dtype, created_at). None when there is no sweep."""
    per = series(runs)
    if workload is not None:
        per = per[per["workload"] == workload]
    if per.empty:
        return None
    return tuple(per.iloc[0][["workload", "gpu"]])


# What a trend needs, in the words the page says when a series has fewer.
TREND_NEEDS = ("a trend needs two or more runs of the same workload on this GPU (with the "
               "same parameters and dtype)")


def _sweeps(runs: pd.DataFrame) -> pd.DataFrame:
    sweeps = runs[runs["kind"] == "sweep"] if not runs.empty else runs
    return sweeps.assign(gpu=sweeps["gpu_name"].where(sweeps["gpu_name"].notna(), "cpu"),
                         params=[param_key(r) for _, r in sweeps.iterrows()])


def series(runs: pd.DataFrame) -> pd.DataFrame:
    """Every series (workload, GPU, parameter set) with its number of sweeps, the most
    runs first, then the newest. `runs` is the runs frame default_view reads."""
    cols = ["workload", "gpu", "params", "runs"]
    sweeps = _sweeps(runs)
    if sweeps.empty:
        return pd.DataFrame(columns=cols)
    per = (sweeps.groupby(["workload", "gpu", "params"])
           .agg(runs=("id", "size"), newest=("created_at", "max"))
           .sort_values(["runs", "newest"], ascending=False).reset_index())
    return per[cols]


def trend_series(runs: pd.DataFrame) -> pd.DataFrame:
    """The series a trend can be drawn for: two runs or more."""
    s = series(runs)
    return s[s["runs"] >= 2].reset_index(drop=True)


SINGLE_COLUMNS = ["run_id", "run", "mode", "batch_size", "speedup", "speedup_ci_low",
                  "speedup_ci_high", "figure"]


def single_runs(runs: pd.DataFrame, summaries) -> pd.DataFrame:
    """Each sweep as one point when no series has two runs: its key figure (the run
    summary's, as the board quotes it), labelled by workload, GPU and id. Runs without a
    key figure are left out."""
    sweeps = _sweeps(runs)
    if sweeps.empty:
        return pd.DataFrame(columns=SINGLE_COLUMNS)
    info = sweeps.set_index(sweeps["id"].astype(int))
    rows = []
    for s in summaries:
        k = s.key
        if k is None or s.header.id not in info.index:
            continue
        r = info.loc[s.header.id]
        rows.append({"run_id": s.header.id,
                     "run": f"{r['workload']} · {r['gpu']} · #{s.header.id}",
                     "mode": k.mode, "batch_size": k.batch_size, "speedup": k.speedup,
                     "speedup_ci_low": k.ci_low, "speedup_ci_high": k.ci_high,
                     "figure": s.speedup_text()})
    return pd.DataFrame(rows, columns=SINGLE_COLUMNS)
