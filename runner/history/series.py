"""Which runs form a series, in what order, and the figure each point is judged on.

A series is every sweep of one workload with the same parameters and dtype on one device
type (a GPU's name, or the CPU), and within it one (mode, batch size): its step time run
after run. The figure is the step time (ms), not the speedup: a torch release that slows
eager and the graphs alike leaves the speedup flat, and that is still a regression.

Host-bound points are judged on the host-normalised step where the run has the figures
(docs/MEASUREMENT.md, "Host and GPU apart"): the step projected to REFERENCE_US a launch
(contract/host_split.py projected_step), so a run on a slower or busier host is not
read as a torch regression. The projected figure keeps the measured step's relative 95%
interval (conservative: normalising narrows the spread a host adds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from contract import host_split
from contract.measurement import Measurement
from contract.numbers import is_missing, number_or_none

# The launch cost a host-bound step is projected to: the middle of the references the
# pages quote (host_split.REFERENCE_LAUNCH_US), a typical server CPU.
REFERENCE_US = 10.0
MEASURED = "measured"
NORMALISED = f"host-normalised (step at {REFERENCE_US:g} us a launch)"
# How a series may be ordered, and what each order means in a caption.
ORDERS = {"torch": "torch version, then date", "date": "date the run started",
          "run": "run id (the order runs were stored)"}
FIGURE_COLUMNS = ["run_id", "mode", "batch_size", "measured_ms", "measured_low",
                  "measured_high", "normalised_ms", "normalised_low", "normalised_high",
                  "host_bound"]


def text(v: Any) -> str:
    """A cell as text; '' for unknown (None, NaN)."""
    return "" if is_missing(v) else str(v)


def torch_key(version: Any) -> tuple:
    """Sort key of a torch version: release numbers, then pre-releases (dev, rc) before
    the release itself; unknown versions first."""
    t = text(version)
    m = re.match(r"(\d+(?:\.\d+)*)(.*)", t)
    if not m:
        return ((), 0, t)
    release = tuple(int(x) for x in m.group(1).split("."))
    rest = m.group(2).split("+")[0]
    return (release, 0 if re.match(r"\.?(dev|a|b|rc)", rest) else 1, rest)


def order_runs(runs: pd.DataFrame, by: str = "torch") -> pd.DataFrame:
    """The runs (id, torch_version, created_at) in the series' order, with `order`
    0, 1, ...; `by` is one of ORDERS."""
    if by not in ORDERS:
        raise ValueError(f"order {by!r} is not one of {', '.join(ORDERS)}")
    if runs.empty:
        return runs.assign(order=pd.Series(dtype=int))

    def key(r) -> tuple:
        rid = int(r["id"])
        if by == "run":
            return (rid,)
        when = r["created_at"]
        when = pd.Timestamp(when).value if not is_missing(when) else 0
        return (torch_key(r["torch_version"]), when, rid) if by == "torch" else (when, rid)

    keys = runs.apply(key, axis=1)
    out = runs.assign(_k=keys).sort_values("_k").drop(columns="_k").reset_index(drop=True)
    return out.assign(order=range(len(out)))


def comparable_params(params: Any, dtype: Any) -> dict:
    """A run's workload parameters as compared: the dtype the runner also records among
    them is compared once, as the dtype."""
    p = dict(params) if isinstance(params, Mapping) else {}
    if p.get("dtype") in (None, dtype):
        p.pop("dtype", None)
    return p


def machine_key(run: Mapping) -> tuple[str, str, str]:
    """The machine a run measured on: its GPU (or the CPU), host CPU model and driver.
    A launch-bound step is the host's as much as the GPU's, so a run of another host
    among a series' runs reads as a change of torch that was a change of machine."""
    gpu = run.get("gpu_name")
    return ("cpu" if is_missing(gpu) else str(gpu), text(run.get("cpu_model")),
            text(run.get("driver_version")))


def machine_text(key: tuple[str, str, str]) -> str:
    """'NVIDIA H200 · Intel Xeon ... · driver 570.1': a machine as a page or the CLI
    names it; unknown parts left out."""
    gpu, cpu, driver = key
    return " · ".join([gpu if gpu != "cpu" else "CPU", *([cpu] if cpu else []),
                       *([f"driver {driver}"] if driver else [])])


def series_key(run: Mapping, mix: bool = False) -> tuple:
    """What makes two runs one series: workload, parameters, dtype and the machine
    (GPU, host CPU, driver: machine_key); with `mix`, the device type only (runs of
    several machines with one GPU, as a reader may ask)."""
    params = comparable_params(run.get("workload_params"), run.get("dtype"))
    machine = machine_key(run)
    return (text(run.get("workload")), tuple(sorted((k, repr(v)) for k, v in params.items())),
            text(run.get("dtype")), *(machine[:1] if mix else machine))


def release(version: Any) -> str:
    """A version without its local suffix: '2.10.0+cu128' -> '2.10.0'."""
    return text(version).split("+", 1)[0]


def torch_matches(asked: str, version: Any) -> bool:
    """Does `asked` name this torch version? The full text matches itself; without a
    local suffix it matches the release (`2.10.0` matches 2.10.0+cu128), and a shorter
    release its patch releases (`2.10` matches 2.10.0 and 2.10.1, not 2.100)."""
    asked, full = asked.strip(), text(version)
    if not asked or not full:
        return False
    if "+" in asked:
        return asked == full
    have = release(full)
    return have == asked or have.startswith(asked + ".")


def record(row: Mapping) -> Measurement:
    """A points-frame row (a bundle's measurement, or the database's) as the typed point."""
    doc = dict(row)
    if not isinstance(doc.get("details"), Mapping):
        doc["details"] = None
    return Measurement.from_json(doc)


def point_figures(m: Measurement) -> dict | None:
    """One ok point's figures: the measured step with its 95% interval, the step
    projected to REFERENCE_US a launch (None where it cannot be) with the same relative
    interval, and whether the host sets the step. None for a point without a step."""
    step = number_or_none(m.timing.step_ms)
    if m.status != "ok" or step is None or step <= 0:
        return None
    low, high = number_or_none(m.intervals.step_ms_ci_low), \
        number_or_none(m.intervals.step_ms_ci_high)
    if low is None or high is None or not low <= step <= high:
        low = high = None
    proj = host_split.projected_step(*host_split.host_figures(m), REFERENCE_US)
    proj = proj if proj is not None and proj > 0 else None
    scale = proj / step if proj is not None else None
    return {"mode": m.mode, "batch_size": int(m.batch_size), "measured_ms": step,
            "measured_low": low, "measured_high": high, "normalised_ms": proj,
            "normalised_low": low * scale if scale and low is not None else None,
            "normalised_high": high * scale if scale and high is not None else None,
            "host_bound": host_split.host_bound(step, m.timing.host_ms_per_step)}


def figures(points: pd.DataFrame) -> pd.DataFrame:
    """Every ok point's figures (FIGURE_COLUMNS), from a points frame with run_id (the
    database's runs_points, or a bundle's measurements with a run id added)."""
    rows = []
    for _, row in points.iterrows():
        got = point_figures(record(row))
        if got is not None:
            rows.append({"run_id": int(row["run_id"]), **got})
    return pd.DataFrame(rows, columns=FIGURE_COLUMNS)


def judged(fig: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The figure one (mode, batch size) is judged on across the runs of `fig` (its rows
    for that point): host-normalised when every run can be normalised and at least half
    of them are host-bound, else as measured for every run (one basis along a series,
    or a step would appear where the basis changed). Returns (basis, frame of run_id,
    value, low, high)."""
    cols = ["run_id", "value", "low", "high"]
    if fig.empty:
        return MEASURED, pd.DataFrame(columns=cols)
    bound = fig["host_bound"].astype(bool)
    if fig["normalised_ms"].notna().all() and bound.sum() * 2 >= len(fig):
        basis, prefix = NORMALISED, "normalised"
    else:
        basis, prefix = MEASURED, "measured"
    out = pd.DataFrame({"run_id": fig["run_id"].astype(int),
                        "value": fig[f"{prefix}_ms"].astype(float),
                        "low": pd.to_numeric(fig[f"{prefix}_low"], errors="coerce"),
                        "high": pd.to_numeric(fig[f"{prefix}_high"], errors="coerce")})
    return basis, out.reset_index(drop=True)
