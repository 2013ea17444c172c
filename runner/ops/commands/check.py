"""`python -m runner check`: does a run hold up against its baseline or its history? The
CI gate of issue 40.

    check --run RUN --baseline RUN_OR_QUERY   each (mode, batch size) of RUN against the
                                              baseline run's
    check --run RUN --series                  the change points of RUN's series (its
                                              workload, parameters, dtype and machine),
                                              and whether one lands at RUN

RUN is a stored run's id or a bundle file; the baseline may also be a query over RUN's
series (`torch=2.5.1`, `label=nightly`, `gpu=NAME`, comma-joined: the newest match) or
`previous` (the run stored before RUN in its series). A series is one machine's runs
(GPU, host CPU, driver) unless --mix-machines. Each point is judged by the one rule
(contract/verdict.py) through runner/history/, on the host-normalised step where the
host sets it, and says the smallest slowdown its noise lets the check see. Exit codes
(check_report.py): 1 when a point is a regression by the rule (its interval wholly
slower) and slower by more than --threshold; 3 when none is, but some point cannot tell
(its noise would hide a slowdown of --threshold's size); 0 when every point was judged
and none regressed; 2 on bad input, nothing judged.

Writes a Markdown summary to $GITHUB_STEP_SUMMARY when it is set (appended, as GitHub
Actions expects) and, with --junit FILE, JUnit XML (one testcase a point and mode, a
failure for each regression, a skipped testcase for each that cannot tell) for CI
systems that read it. Both are checked (contract/outfile.py) before any run is read and
written before the verdict is printed. The database layer, pandas and
the change-point library are imported inside functions: the CLI's parser imports every
command module, on GPU hosts too.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract import bundle as fmt
from contract import outfile
from contract.limits import REGRESSION_THRESHOLD
from runner.ops.cli import UsageError
from runner.ops.commands.flags import db_flag, table
from runner.ops.commands.store import open_engine, parse_run_id

if TYPE_CHECKING:  # check_report stands on pandas: imported where a check runs
    from runner.ops.commands.check_report import Row

DEFAULT_THRESHOLD = REGRESSION_THRESHOLD * 100  # percent
MAX_THRESHOLD = 1000.0
QUERY_KEYS = ("torch", "label", "gpu")
PREVIOUS = "previous"
FILE_RUN, FILE_BASELINE = -1, -2  # the ids a bundle file's run is known by when not stored
# --run and --baseline: a run id, a file name or a short query; anything longer is a
# mistake (a pasted file), refused in one line rather than handed to the file system.
MAX_RUN_TEXT = 1000
SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def register(sub) -> None:
    p = sub.add_parser(
        "check", parents=[db_flag()],
        help="exit 1 when a run regressed against a baseline or its history (CI)",
        description="Check one run against a baseline run (--baseline) or its series' "
                    "change points (--series): a table; exit 0 when every point was "
                    "judged and none regressed, 1 on a regression beyond --threshold "
                    "outside the intervals, 3 when some point's noise would hide a "
                    "regression of --threshold's size (cannot tell), 2 on bad input. "
                    f"Appends a Markdown summary to ${SUMMARY_ENV} when set.")
    p.add_argument("--run", required=True, metavar="RUN",
                   help="the run to check: a stored run's id, or a bundle file")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--baseline", metavar="RUN_OR_QUERY",
                     help="a run id, a bundle file, 'previous' (the run before RUN in its "
                          "series), or KEY=VALUE[,KEY=VALUE] over RUN's series with keys "
                          f"{', '.join(QUERY_KEYS)} (the newest match; torch=2.10 matches "
                          "2.10.0+cu128)")
    how.add_argument("--series", action="store_true",
                     help="find the change points of RUN's series (stored runs of its "
                          "workload, parameters, dtype and machine) and check the one at "
                          "RUN")
    p.add_argument("--mix-machines", action="store_true",
                   help="let the series (and a baseline query) hold runs of other "
                        "machines with the same GPU (another host CPU or driver); by "
                        "default a series is one machine's runs")
    p.add_argument("--threshold", default=f"{DEFAULT_THRESHOLD:g}", metavar="PERCENT",
                   help=f"a regression fails the check only when slower by more than this "
                        f"(default {DEFAULT_THRESHOLD:g}%%); a point whose noise hides a "
                        "slowdown this size cannot tell")
    p.add_argument("--order", default="date", choices=("torch", "date", "run"),
                   help="how --series orders the runs (default: date)")
    p.add_argument("--junit", metavar="FILE.xml",
                   help="also write JUnit XML here (- for standard output: the table then "
                        "goes to standard error)")
    p.set_defaults(func=run_check, one_line=True)


def shown(text: str, limit: int = 60) -> str:
    """A value the user gave, as a message quotes it: cut to one short line."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def parse_threshold(text: str) -> float:
    """--threshold as a share (5 or 5% -> 0.05); UsageError naming the value."""
    s = str(text).strip().removesuffix("%").strip()
    bad = UsageError(f"--threshold {shown(text)} is not a percentage: give a number from 0 "
                     f"to {MAX_THRESHOLD:g}, such as 5 or 5%")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", s):
        raise bad
    value = float(s)
    if not math.isfinite(value) or value > MAX_THRESHOLD:
        raise bad
    return value / 100


def check_text(text: str, flag: str) -> str:
    """--run / --baseline within bounds (length, characters): UsageError naming it."""
    if len(text) > MAX_RUN_TEXT:
        raise UsageError(f"{flag} {shown(text)} is {len(text):,} characters: give a run "
                         f"id, a bundle file or a query of at most {MAX_RUN_TEXT:,}")
    if not text.strip() or any(ord(ch) < 32 for ch in text):
        raise UsageError(f"{flag} {shown(text)} is empty or holds control characters")
    return text


def parse_query(text: str) -> dict[str, str]:
    """KEY=VALUE[,KEY=VALUE] with keys QUERY_KEYS; UsageError naming the bad part."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value:
            raise UsageError(f"--baseline {shown(text)}: {shown(part.strip())} is not "
                             "KEY=VALUE (or give a run id, a bundle file or 'previous')")
        if key not in QUERY_KEYS:
            raise UsageError(f"--baseline {shown(text)}: unknown key {shown(key)}; keys: "
                             f"{', '.join(QUERY_KEYS)}")
        if key in out:
            raise UsageError(f"--baseline {shown(text)}: {key!r} is given twice")
        out[key] = value
    return out


@dataclass
class Loaded:
    """One run as the check reads it: its id (stored, or FILE_RUN / FILE_BASELINE for a
    bundle file not stored), how it is named, its header fields and its points frame."""

    run_id: int
    name: str
    header: dict
    points: Any  # pandas.DataFrame, with run_id (pandas ships no types here)


def _looks_like_file(text: str) -> bool:
    if text.lower().endswith(".json") or os.sep in text:
        return True
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # a name too long for the file system: not a file
        return False


def _from_file(path: str, file_id: int) -> tuple[Loaded, str]:
    import pandas as pd

    try:
        doc = fmt.read(path)
    except fmt.BundleError as e:
        raise fmt.BundleError(e if path in str(e) else f"{path}: {e}") from None
    if (doc["run"].get("kind") or "sweep") != "sweep":
        raise UsageError(f"{path}: a {doc['run']['kind']} run has no step times to check: "
                         "give a sweep")
    header = {**doc["environment"], **doc["run"], "id": file_id}
    header["created_at"] = pd.to_datetime(header.get("created_at"), utc=True)
    points = pd.DataFrame(doc["measurements"]).assign(run_id=file_id)
    return Loaded(file_id, path, header, points), doc["run"]["uuid"]


class Store:
    """The database, opened only when a run id, a query or --series needs it."""

    def __init__(self, url: str | None):
        self.url, self._engine = url, None

    @property
    def engine(self):
        if self._engine is None:
            self._engine = open_engine(self.url, must_exist=True)
        return self._engine

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()

    def load(self, run_id: int, what: str) -> Loaded:
        from db import queries

        headers = queries.runs_headers(self.engine, [run_id])
        if headers.empty:
            raise UsageError(f"{what} {run_id}: no such run in {self.shown()}")
        header = headers.iloc[0].to_dict()
        if (header.get("kind") or "sweep") != "sweep":
            raise UsageError(f"{what} {run_id} is a {header['kind']} run: give a sweep")
        return Loaded(run_id, f"run {run_id}", header,
                      queries.runs_points(self.engine, [run_id]))

    def stored_id(self, uuid: str) -> int | None:
        from db import queries

        runs = queries.runs_frame(self.engine)
        match = runs[runs["uuid"] == uuid]
        return int(match["id"].iloc[0]) if not match.empty else None

    def series_runs(self, header: dict, gpu: str | None = None, mix: bool = False):
        """The stored sweeps of the header's series: its machine's (GPU, host CPU,
        driver) unless `mix`; with `gpu`, that GPU's runs in place of its device (any
        machine with it: the reader asked for another GPU)."""
        import pandas as pd

        from contract.numbers import is_missing
        from db import queries
        from runner.history import series as hs

        named = header.get("gpu_name")  # a database frame reads a CPU run's as None or NaN
        device = gpu or ("cpu" if is_missing(named) or not named else str(named))
        runs = queries.trend_runs(self.engine, header["workload"], device)
        mix = mix or gpu is not None
        want = hs.series_key({**header, "gpu_name": None if device == "cpu" else device},
                             mix=mix)
        keep = pd.Series([hs.series_key(r, mix=mix) == want for _, r in runs.iterrows()],
                         index=runs.index, dtype=bool)
        return runs[keep].reset_index(drop=True)

    def other_machines(self, header: dict) -> list[str]:
        """The other machines with this run's GPU that ran its series (each named once):
        shown apart, never joined silently."""
        from runner.history import series as hs

        mixed = self.series_runs(header, mix=True)
        mine = hs.machine_key(header)
        return sorted({hs.machine_text(hs.machine_key(r)) for _, r in mixed.iterrows()
                       if hs.machine_key(r) != mine})

    def shown(self) -> str:
        from runner.ops.commands.store import shown_url

        return repr(shown_url(str(self.engine.url)))


def load_run(store: Store, text: str, what: str, file_id: int, lookup: bool) -> Loaded:
    """A run id or a bundle file. With `lookup` (the database is read anyway), a file
    whose run is stored is the stored run, so its series finds it in place."""
    if _looks_like_file(text):
        loaded, uuid = _from_file(text, file_id)
        stored = store.stored_id(uuid) if lookup else None
        if stored is not None:
            loaded.run_id = stored
            loaded.points = loaded.points.assign(run_id=stored)
        return loaded
    try:
        run_id = parse_run_id(text)
    except UsageError:
        also = (f", 'previous' nor KEY=VALUE (keys {', '.join(QUERY_KEYS)})"
                if what == "--baseline" else "")
        raise UsageError(f"{what} {shown(text)} is neither a run id nor a bundle "
                         f"file{also}") from None
    return store.load(run_id, what)


def find_baseline(store: Store, run: Loaded, text: str, mix: bool = False) -> Loaded:
    """--baseline: a run, a file, 'previous' or a query over the run's series."""
    from runner.history import series as hs

    if text.strip() != PREVIOUS and "=" not in text:
        return load_run(store, text, "--baseline", FILE_BASELINE, lookup=False)
    query = {} if text.strip() == PREVIOUS else parse_query(text)
    runs = store.series_runs(run.header, query.get("gpu"), mix=mix)
    if not runs.empty:
        runs = runs[runs["id"].astype(int) != run.run_id]
    if "torch" in query and not runs.empty:
        runs = runs[[hs.torch_matches(query["torch"], v) for v in runs["torch_version"]]]
    if "label" in query and not runs.empty:
        runs = runs[runs["label"] == query["label"]]
    if text.strip() == PREVIOUS and not runs.empty:
        when = run.header.get("created_at")
        runs = runs[runs["created_at"] < when] if when is not None else runs.iloc[0:0]
    if runs.empty:
        where = "device" if mix or "gpu" in query else "machine (GPU, host CPU, driver)"
        raise UsageError(f"--baseline {shown(text)}: no stored sweep of "
                         f"{shown(str(run.header['workload']))} with the same parameters, "
                         f"dtype and {where} matches in {store.shown()}")
    newest = runs.sort_values(["created_at", "id"]).iloc[-1]
    return store.load(int(newest["id"]), "--baseline")


def _interval(low, high) -> str:
    from contract import verdict as vd

    return "-" if low is None or high is None else vd.interval_text(low, high)


def baseline_rows(run: Loaded, base: Loaded, threshold: float) -> list[Row]:
    from runner.history import changes as hc
    from runner.ops.commands import check_report as report

    checks = hc.check_points(base.points, run.points)
    if not checks:
        raise UsageError(f"{run.name} and the baseline {base.name} share no measured "
                         "(mode, batch size): nothing to check")
    return [report.row(c.mode, c.batch_size, c.basis, c.baseline_ms, c.run_ms, c.change,
                       _interval(c.ratio_low, c.ratio_high), c.verdict,
                       f"against {base.name}", c.detectable, threshold) for c in checks]


def series_rows(store: Store, run: Loaded, order: str, threshold: float, mix: bool
                ) -> tuple[list[Row], int]:
    """The run's points against the change points of its series; also how many runs the
    series holds."""
    import pandas as pd

    from runner.history import changes as hc
    from runner.ops.commands import check_report as report

    runs = store.series_runs(run.header, mix=mix)
    points = store_points(store, runs["id"].astype(int).tolist())
    if run.run_id not in set(runs["id"].astype(int)):  # a bundle file not stored
        runs = pd.concat([runs, pd.DataFrame([{k: run.header.get(k) for k in runs.columns}])],
                         ignore_index=True)
        points = pd.concat([points, run.points], ignore_index=True)
    fig, found = hc.change_points(runs, points, order)
    sees = {(m, int(b)): d for m, b, d in hc.detectable_at(fig, run.run_id)[
        ["mode", "batch_size", "detectable"]].itertuples(index=False)}
    mine = fig[fig["run_id"] == run.run_id]
    rows = []
    mine = mine.assign(_m=mine["mode"].map(hc.mode_key))
    for _, f in mine.sort_values(["_m", "batch_size"]).iterrows():
        key = (f["mode"], int(f["batch_size"]))
        one = fig[(fig["mode"] == key[0]) & (fig["batch_size"] == key[1])]
        at = found[(found["mode"] == key[0]) & (found["batch_size"] == key[1])
                   & (found["after_run"] == run.run_id)]
        detectable = sees.get(key, math.inf)
        if not at.empty:
            c = at.iloc[0]
            rows.append(report.row(
                key[0], key[1], c["basis"], float(c["before_median"]),
                float(c["after_median"]), float(c["change"]),
                _interval(c["ratio_low"], c["ratio_high"]), c["verdict"],
                f"change point: {int(c['before_runs'])} run(s) before, "
                f"{int(c['after_runs'])} from here", detectable, threshold))
            continue
        earlier = one[one["order"] < f["order"]]
        before = float(earlier["value"].median()) if not earlier.empty else None
        note = ("no change point at this run" if not earlier.empty
                else "first run of the series here")
        rows.append(report.row(key[0], key[1], f["basis"], before, float(f["value"]),
                               float(f["value"]) / before - 1 if before else None, "-",
                               "no change", note, detectable, threshold))
    return rows, len(runs)


def store_points(store: Store, ids: list[int]):
    from db import queries

    return queries.runs_points(store.engine, ids)


@dataclass
class Outputs:
    """Where the check writes besides the console, each checked and probed before any
    run is read: --junit and the step summary."""

    junit: outfile.Output | None
    summary: outfile.Output | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Outputs:
        junit = outfile.checked(args.junit, "--junit") if args.junit is not None else None
        path = os.environ.get(SUMMARY_ENV)
        summary = (outfile.checked(path, f"${SUMMARY_ENV}", stdout=False)
                   if path else None)
        return cls(junit, summary)


def judge(args: argparse.Namespace, threshold: float
          ) -> tuple[str, str, list[Row], list[str]]:
    """(title, workload, rows, notes) of the check the flags ask for."""
    from runner.history import series as hs

    store = Store(args.db)
    try:
        # Two bundle files need no database; anything else reads it.
        lookup = args.series or not _looks_like_file(args.baseline)
        run = load_run(store, args.run, "--run", FILE_RUN, lookup)
        notes = []
        if args.series:
            rows, n = series_rows(store, run, args.order, threshold, args.mix_machines)
            title = f"launchbench check: {run.name} against its series"
            where = ("machines with this GPU" if args.mix_machines else
                     f"one machine: {hs.machine_text(hs.machine_key(run.header))}")
            notes.append(f"{n} run(s) of {run.header['workload']} in the series ({where}), "
                         f"ordered by {args.order}")
            if n < 2:
                notes.append("one run in this series: nothing to check against yet")
            if not args.mix_machines:
                notes += [f"left out, another machine: {m} (--mix-machines to join it)"
                          for m in store.other_machines(run.header)]
        else:
            base = find_baseline(store, run, args.baseline, args.mix_machines)
            if base.run_id == run.run_id or base.header.get("uuid") == run.header.get("uuid"):
                raise UsageError(f"--baseline {shown(args.baseline)} is the run itself")
            rows = baseline_rows(run, base, threshold)
            title = f"launchbench check: {run.name} against {base.name}"
            if hs.machine_key(base.header) != hs.machine_key(run.header):
                notes.append(f"the baseline ran on another machine: "
                             f"{hs.machine_text(hs.machine_key(base.header))}")
    finally:
        store.dispose()
    if any(r.basis.startswith("host") for r in rows):
        notes.append(f"host-bound points are judged on the {hs.NORMALISED} step")
    notes.append("sees from: the smallest slowdown the check could call a regression at "
                 "95% given the noise; where it is above the threshold the point cannot "
                 "tell")
    return title, str(run.header["workload"]), rows, notes


def run_check(args: argparse.Namespace) -> int:
    from runner.ops.commands import check_report as report

    threshold = parse_threshold(args.threshold)
    check_text(args.run, "--run")
    if args.baseline is not None:
        check_text(args.baseline, "--baseline")
    outputs = Outputs.from_args(args)  # a path it cannot write: one line, nothing judged
    title, workload, rows, notes = judge(args, threshold)
    # The files first, the verdict last: a file that fails now is one line and exit 2,
    # and no "ok" has been printed before it.
    if outputs.junit is not None:
        outputs.junit.write(report.junit(title, workload, rows, threshold))
    if outputs.summary is not None:
        outputs.summary.append(report.markdown(title, rows, threshold, notes))
    say = sys.stderr if outputs.junit is not None and outputs.junit.is_stdout else sys.stdout
    print(title, file=say)
    for n in notes:
        print(f"  {n}", file=say)
    for line in table([report.HEAD] + [report.cells(r) for r in rows],
                      left=(0, 2, 7, 9, 10)):
        print(line, file=say)
    print(report.outcome_line(rows, threshold), file=say)
    return report.exit_code(rows)
