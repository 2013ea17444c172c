"""Several runs side by side (the Compare page): series names, speedups overlaid, each run
against a baseline with the verdict of the ratio, environment differences, runs reporting
another statistic than the runner's median, and memory and energy side by side. Over
records: the runs' headers and their points by run id; each table's frame is made at its
end. Whether runs measure the same thing is contract/comparability.py's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from contract import memory
from contract.bundle import ENVIRONMENT_FIELDS
from contract.comparability import (
    COMPARABLE_FIELDS,
    comparability,
    compare_rule,
    header_params,
    value_text,
)
from contract.measurement import Measurement
from contract.metrics import BYTES_PER_MIB
from contract.noise import launch_cost, ratio_interval, ratio_verdict
from contract.numbers import number_or_none
from contract.run_summary import RunHeader
from contract.speedups import Speedup, mode_order, speedups, usable
from contract.vocab import MODE_TABLE, MODES
from pages.logic.names import device_name, known, short_device
from pages.logic.plain import MAX_CELL, cut
from pages.logic.run_text import environment_text

RUNNER_STATISTIC = "median"
RunPoints = Mapping[int, Sequence[Measurement]]
_RANK = {m: i for i, m in enumerate(MODES)}


def _key(k: tuple[str, int]) -> tuple[int, int]:
    return _RANK.get(k[0], len(_RANK)), k[1]


@dataclass(frozen=True)
class RunSpeedups:
    """One run's speedups as Compare draws them: its name and the series it belongs to."""
    run: str
    series: str
    speedups: Sequence[Speedup]


def _statistic(m: Measurement) -> str | None:
    said = m.source.statistic
    return str(said) if said else None


def statistic_flags(headers: Sequence[RunHeader], points: RunPoints) -> list[str]:
    """One line per run whose points give another statistic than the runner's median
    (the published article gives means of CUDA-event timings): its times and ratios are
    not quite like for like with a measured run's."""
    lines = []
    names = run_names(headers)
    for rid in names:
        stats = {s for s in map(_statistic, points.get(rid, ())) if s}
        other = sorted(s for s in stats if not s.lower().startswith(RUNNER_STATISTIC))
        if other:
            lines.append(f"{names[rid]} gives {other[0].split(',')[0]}, not medians as "
                         "launchbench measures: its times and ratios differ in statistic, "
                         "not only in hardware.")
    return lines


def _side_by_side(values: dict[tuple[str, int], dict[int, float]],
                  headers: Sequence[RunHeader], unit: str) -> pd.DataFrame:
    if not values:
        return pd.DataFrame(columns=["mode", "batch_size"])
    # Only the runs with a figure here: a column of blanks (a published run, a run from
    # before the isolated memory pass) read as "None" down the table; without() names them.
    having = {rid for v in values.values() for rid in v}
    names = {rid: name for rid, name in short_names(headers).items() if rid in having}
    keys = sorted(values, key=_key)
    return pd.DataFrame([{"mode": m, "batch_size": b,
                          **{f"{name} {unit}": values[(m, b)].get(rid) for rid, name
                             in names.items()}} for m, b in keys],
                        columns=["mode", "batch_size", *(f"{n} {unit}" for n in names.values())])


# The words for contract/vocab.py's dashes (Vega strokeDash: dash, gap in px).
DASH_WORDS: dict[tuple[int, ...], str] = {(1, 0): "solid", (1, 3): "dotted", (2, 2): "short dashes",
              (6, 3): "long dashes"}


def dash_legend(series: Iterable[Iterable[Any]]) -> str:
    """The line dash of each mode drawn on Compare's speedup chart, in words: the chart's
    Mode legend shows the marks only (one legend for both drew the dash over each mark)."""
    drawn = {s.mode for ss in series for s in ss}
    named = [f"{m.name} {DASH_WORDS.get(tuple(m.dash), 'dashed')}"
             for m in MODE_TABLE.values() if m.name in drawn and m.name != "eager"]
    return ("Lines: " + ", ".join(named) + "; the dashed grey line at 1x is eager itself."
            if named else "")


def without(table: pd.DataFrame, headers: Sequence[RunHeader], unit: str) -> list[str]:
    """The names of the runs a side-by-side table (memory_table, energy_table) has no
    column for: none of their points has that figure."""
    full = run_names(headers)
    return [full[rid] for rid, name in short_names(headers).items()
            if f"{name} {unit}" not in table.columns]


def memory_table(points: RunPoints, headers: Sequence[RunHeader]) -> pd.DataFrame:
    """Per (mode, batch): each run's memory cost over eager (MiB, contract/memory.py),
    side by side; only (mode, batch) pairs some run measured a cost at. Empty when no
    run has one (CPU runs, published figures, runs from before the isolated memory
    pass: old_memory_runs names those)."""
    values: dict[tuple[str, int], dict[int, float]] = {}
    for rid, pts in points.items():
        for c in memory.costs(usable(pts)):
            if c.cost_bytes is not None:
                values.setdefault((c.mode, c.batch_size), {})[rid] = c.cost_bytes / BYTES_PER_MIB
    return _side_by_side(values, headers, "MiB")


def old_memory_runs(points: RunPoints, headers: Sequence[RunHeader]) -> list[str]:
    """The names of the runs whose memory was measured before the isolated memory pass:
    they have graph pools but no cost over eager, so the cost table leaves them out."""
    names = run_names(headers)
    return [names[rid] for rid, pts in points.items() if rid in names
            and any(c.old and c.pool_bytes for c in memory.costs(usable(pts)))]


def energy_table(points: RunPoints, headers: Sequence[RunHeader]) -> pd.DataFrame:
    """Per (mode, batch): each run's energy per step (mJ), side by side; only pairs some
    run measured energy at. Empty when no run has energy figures (CPU runs, runs from
    before bundle version 5, --no-energy)."""
    values: dict[tuple[str, int], dict[int, float]] = {}
    for rid, pts in points.items():
        for m in usable(pts):
            e = number_or_none(m.energy.energy_mj_per_step)
            if e is not None:
                values.setdefault((m.mode, m.batch_size), {})[rid] = e
    return _side_by_side(values, headers, "mJ")


def _joined(lines: list[str], prefix: str) -> str:
    """Lines that each start with `prefix` as one: the prefix once, their rest joined."""
    rest = [line[len(prefix):].rstrip(".") if line.startswith(prefix) else line.rstrip(".")
            for line in lines]
    return prefix + "; ".join(rest) + "."


def caveats(headers: Sequence[RunHeader], points: RunPoints) -> list[tuple[str, str]]:
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
    published = [names[h.id] for h in headers if h.source == "published"]
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


def series_name(header: RunHeader) -> str:
    """How a run is named in a comparison: GPU and torch version, marked when published."""
    gpu = device_name(header)
    torch = known(header.torch_version)
    name = f"{gpu} · torch {torch}" if torch else gpu
    if header.source == "published":
        name += " (published)"
    return name


def run_names(headers: Sequence[RunHeader]) -> dict[int, str]:
    """Run id -> '#id GPU · torch', unique even when two runs share an environment."""
    return {h.id: f"#{h.id} {series_name(h)}" for h in headers}


def short_names(headers: Sequence[RunHeader]) -> dict[int, str]:
    """Run id -> '#9 H100': a run as a table's column header or cell names it (its whole
    name, run_names', made four tables wider than the page at 1280 px; names_legend says
    each in full)."""
    return {h.id: f"#{h.id} {short_device(h)}" for h in headers}


def names_legend(headers: Sequence[RunHeader]) -> str:
    """The one line that maps each table's short run name to the run's whole name."""
    full, short = run_names(headers), short_names(headers)
    return "In the tables: " + "; ".join(f"{short[i]} is {full[i]}" for i in full) + "."


def long_params(headers: Sequence[RunHeader]) -> dict[int, dict]:
    """The workload parameters of each run that has a value over MAX_CELL characters,
    which the pages cut: what the "in full" download on Compare and the Run page holds."""
    out = {}
    for h in headers:
        params = h.workload_params or {}
        if any(len(str(v)) > MAX_CELL or len(str(k)) > MAX_CELL for k, v in params.items()):
            out[int(h.id)] = dict(params)
    return out


def compare_speedups(points: RunPoints, headers: Sequence[RunHeader]) -> list[RunSpeedups]:
    """Each run's speedups with its name and series, for the overlay chart."""
    names = run_names(headers)
    series = {h.id: series_name(h) for h in headers}
    # Two runs of one GPU and torch (a rerun, another day's host) would share a colour and
    # a legend entry: each is then its own series, named with its id.
    shared = {s for s, n in Counter(series.values()).items() if n > 1}
    return [RunSpeedups(names[h.id], names[h.id] if series[h.id] in shared else series[h.id],
                        speedups(points.get(h.id, ()))) for h in headers]


def _step_figures(points: RunPoints, ids: Sequence[int]
                  ) -> dict[tuple[str, int], dict[int, Measurement]]:
    out: dict[tuple[str, int], dict[int, Measurement]] = {}
    for rid in ids:
        for m in usable(points.get(rid, ())):
            out.setdefault((m.mode, m.batch_size), {})[rid] = m
    return out


def ratio_table(points: RunPoints, headers: Sequence[RunHeader],
                baseline: int | None = None) -> pd.DataFrame:
    """Per (mode, batch): each run's step time, and how many times faster each run is than
    the baseline run (baseline ms / run ms; > 1 means faster). Only (mode, batch) pairs
    that at least two runs measured are kept (a ratio needs two); a run without an ok
    point there keeps NaN."""
    if not headers:
        return pd.DataFrame(columns=["mode", "batch_size"])
    names = short_names(headers)
    ids = [h.id for h in headers]
    base = ids[0] if baseline is None else int(baseline)
    found = {k: v for k, v in _step_figures(points, ids).items() if len(v) >= 2}
    if not found:
        return pd.DataFrame(columns=["mode", "batch_size"])
    rows = []
    for (mode, batch) in sorted(found, key=_key):
        at = found[(mode, batch)]
        row: dict[str, object] = {"mode": mode, "batch_size": batch}
        for rid in ids:
            if rid == base:
                continue
            col = f"{names[rid]} vs #{base}"
            if rid in at and base in at:
                b, r = at[base], at[rid]
                ratio = float(b.timing.step_ms or 0) / float(r.timing.step_ms or 1)
                row[col] = ratio
                row[f"{col} 95%"] = _verdict_text(ratio_interval(
                    b.intervals.step_ms_ci_low, b.intervals.step_ms_ci_high,
                    r.intervals.step_ms_ci_low, r.intervals.step_ms_ci_high))
            else:
                row[col], row[f"{col} 95%"] = float("nan"), "—"
        # The answer first: ratios and their verdicts, then each run's own time, so the
        # ratio is on screen at 1280 px however many runs are compared.
        for rid in ids:
            row[f"{names[rid]} ms"] = (float(at[rid].timing.step_ms or 0) if rid in at
                                       else float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_rows(table: pd.DataFrame, headers: Sequence[RunHeader],
               baseline: int | None = None) -> pd.DataFrame:
    """ratio_table's figures a row a run (mode, batch, run, ratio, its 95% verdict, the
    run's and the baseline's step ms): a column a run and figure made the table wider
    than the page at 1280 px from three runs on."""
    cols = ["mode", "batch_size", "run", "vs baseline", "95%", "run ms", "baseline ms"]
    if table.empty or not headers:
        return pd.DataFrame(columns=cols)
    names = short_names(headers)
    base = headers[0].id if baseline is None else int(baseline)
    rows = []
    for _, r in table.iterrows():
        for rid, name in names.items():
            if rid == base:
                continue
            col = f"{name} vs #{base}"
            rows.append({"mode": r["mode"], "batch_size": r["batch_size"], "run": name,
                         "vs baseline": r[col], "95%": r[f"{col} 95%"],
                         "run ms": r[f"{name} ms"], "baseline ms": r[f"{names[base]} ms"]})
    return pd.DataFrame(rows, columns=cols)


def _verdict_text(interval: tuple[float, float] | None) -> str:
    said = ratio_verdict(interval)
    if interval is None:
        return said
    return f"{said} ({interval[0]:.2f}-{interval[1]:.2f}x)"


LAUNCH_FIELD = "host launch cost (us, median and range)"


def _field_text(field: str, value: object) -> str:
    """A field's value as the Environment view words it (GPU memory in GiB), else as text."""
    if field in ENVIRONMENT_FIELDS and (text := environment_text(field, value)) is not None:
        return text
    return value_text(value)


def environment_diff(headers: Sequence[RunHeader], only_differences: bool = True,
                     points: RunPoints | None = None) -> pd.DataFrame:
    """Environment and workload fields side by side, one column per run. With
    `only_differences`, only the fields whose values are not all equal. Given the runs'
    points, a row for the host's launch cost too: it is a property of the host (CPU,
    driver), so two GPUs on different hosts differ in it as much as in the GPU."""
    fields = [*COMPARABLE_FIELDS, "source", *ENVIRONMENT_FIELDS]
    names = short_names(headers)
    launch = {}
    if points is not None:
        fields.append(LAUNCH_FIELD)
        for h in headers:
            lc = launch_cost(points.get(h.id, ()))
            launch[h.id] = lc.text() if lc else "—"
    rows = []
    for f in fields:
        values = [launch[h.id] if f == LAUNCH_FIELD
                  else _field_text(f, getattr(h, f)) for h in headers]
        differs = len(set(values)) > 1
        if differs or not only_differences:
            cells = dict(zip(names.values(), (cut(v, MAX_CELL) for v in values),
                             strict=True))
            rows.append({"field": f, **cells, "differs": differs})
    return pd.DataFrame(rows, columns=["field", *names.values(), "differs"])


__all__ = ["LAUNCH_FIELD", "RunSpeedups", "caveats", "compare_rule", "compare_speedups",
           "energy_table", "environment_diff", "header_params", "memory_table",
           "mode_order", "names_legend", "ratio_rows", "ratio_table", "run_names", "series_name",
           "short_names", "statistic_flags",
           "value_text"]
