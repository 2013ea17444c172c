"""`python -m runner check`: does a run hold up against its baseline or its history? The
CI gate of issue 40.

    check --run RUN --baseline RUN_OR_QUERY   each (mode, batch size) of RUN against the
                                              baseline run's
    check --run RUN --series                  the change points of RUN's series (its
                                              workload, parameters, dtype and device),
                                              and whether one lands at RUN

RUN is a stored run's id or a bundle file; the baseline may also be a query over RUN's
series (`torch=2.5.1`, `label=nightly`, `gpu=NAME`, comma-joined: the newest match) or
`previous` (the run stored before RUN in its series). Each point is judged by the one
rule (contract/verdict.py) through runner/history/, on the host-normalised step
where the host sets it. Exit 1 when a point is a regression by the rule (its interval
wholly slower) and slower by more than --threshold; 0 otherwise; 2 on bad input.

Writes a Markdown summary to $GITHUB_STEP_SUMMARY when it is set (appended, as GitHub
Actions expects) and, with --junit FILE, JUnit XML (one testcase a point and mode, a
failure for each regression) for CI systems that read it. The database layer, pandas and
the change-point library are imported inside functions: the CLI's parser imports every
command module, on GPU hosts too.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contract import bundle as fmt
from runner.ops.cli import UsageError
from runner.ops.commands.flags import db_flag, table
from runner.ops.commands.store import open_engine, parse_run_id

DEFAULT_THRESHOLD = 5.0  # percent
MAX_THRESHOLD = 1000.0
QUERY_KEYS = ("torch", "label", "gpu")
PREVIOUS = "previous"
FILE_RUN, FILE_BASELINE = -1, -2  # the ids a bundle file's run is known by when not stored


def register(sub) -> None:
    p = sub.add_parser(
        "check", parents=[db_flag()],
        help="exit 1 when a run regressed against a baseline or its history (CI)",
        description="Check one run against a baseline run (--baseline) or its series' "
                    "change points (--series): a table, exit 1 on a regression beyond "
                    "--threshold and outside the intervals, 0 otherwise, 2 on bad input. "
                    "Appends a Markdown summary to $GITHUB_STEP_SUMMARY when set.")
    p.add_argument("--run", required=True, metavar="RUN",
                   help="the run to check: a stored run's id, or a bundle file")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--baseline", metavar="RUN_OR_QUERY",
                     help="a run id, a bundle file, 'previous' (the run before RUN in its "
                          "series), or KEY=VALUE[,KEY=VALUE] over RUN's series with keys "
                          f"{', '.join(QUERY_KEYS)} (the newest match)")
    how.add_argument("--series", action="store_true",
                     help="find the change points of RUN's series (stored runs of its "
                          "workload, parameters, dtype and device) and check the one at RUN")
    p.add_argument("--threshold", default=f"{DEFAULT_THRESHOLD:g}", metavar="PERCENT",
                   help=f"a regression fails the check only when slower by more than this "
                        f"(default {DEFAULT_THRESHOLD:g}%%)")
    p.add_argument("--order", default="date", choices=("torch", "date", "run"),
                   help="how --series orders the runs (default: date)")
    p.add_argument("--junit", metavar="FILE.xml", help="also write JUnit XML here")
    p.set_defaults(func=run_check)


def parse_threshold(text: str) -> float:
    """--threshold as a share (5 or 5% -> 0.05); UsageError naming the value."""
    s = str(text).strip().removesuffix("%").strip()
    bad = UsageError(f"--threshold {text!r} is not a percentage: give a number from 0 to "
                     f"{MAX_THRESHOLD:g}, such as 5 or 5%")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", s):
        raise bad
    value = float(s)
    if not math.isfinite(value) or value > MAX_THRESHOLD:
        raise bad
    return value / 100


def check_out_file(path: str) -> Path:
    """--junit must be writable before anything is read: nothing is half-done."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise UsageError(f"--junit {path!r} is a directory, expected a file name")
    if not parent.is_dir():
        raise UsageError(f"--junit {path!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"--junit {path!r} is not writable")
    return p


def write_atomically(path: Path, text: str) -> None:
    """A reader never sees half a file; a crash leaves the old one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_query(text: str) -> dict[str, str]:
    """KEY=VALUE[,KEY=VALUE] with keys QUERY_KEYS; UsageError naming the bad part."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value:
            raise UsageError(f"--baseline {text!r}: {part.strip()!r} is not KEY=VALUE (or "
                             "give a run id, a bundle file or 'previous')")
        if key not in QUERY_KEYS:
            raise UsageError(f"--baseline {text!r}: unknown key {key!r}; keys: "
                             f"{', '.join(QUERY_KEYS)}")
        if key in out:
            raise UsageError(f"--baseline {text!r}: {key!r} is given twice")
        out[key] = value
    return out


@dataclass
class Loaded:
    """One run as the check reads it: its id (stored, or FILE_RUN / FILE_BASELINE for a
    bundle file not stored), how it is named, its header fields and its points frame."""

    run_id: int
    name: str
    header: dict
    points: object  # pandas.DataFrame, with run_id


def _looks_like_file(text: str) -> bool:
    return text.lower().endswith(".json") or os.sep in text or Path(text).exists()


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

    def series_runs(self, header: dict, gpu: str | None = None):
        """The stored sweeps of the header's series (with `gpu` in place of its device)."""
        from contract.numbers import is_missing
        from db import queries
        from runner.history import series as hs

        named = header.get("gpu_name")  # a database frame reads a CPU run's as None or NaN
        device = gpu or ("cpu" if is_missing(named) or not named else str(named))
        runs = queries.trend_runs(self.engine, header["workload"], device)
        want = hs.series_key({**header, "gpu_name": None if device == "cpu" else device})
        keep = [hs.series_key(r) == want for _, r in runs.iterrows()]
        return runs[keep].reset_index(drop=True)

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
        raise UsageError(f"{what} {text!r} is neither a run id nor a bundle file{also}"
                         ) from None
    return store.load(run_id, what)


def find_baseline(store: Store, run: Loaded, text: str) -> Loaded:
    """--baseline: a run, a file, 'previous' or a query over the run's series."""
    if text.strip() != PREVIOUS and "=" not in text:
        return load_run(store, text, "--baseline", FILE_BASELINE, lookup=False)
    query = {} if text.strip() == PREVIOUS else parse_query(text)
    runs = store.series_runs(run.header, query.get("gpu"))
    runs = runs[runs["id"].astype(int) != run.run_id]
    if "torch" in query:
        runs = runs[runs["torch_version"] == query["torch"]]
    if "label" in query:
        runs = runs[runs["label"] == query["label"]]
    if text.strip() == PREVIOUS:
        when = run.header.get("created_at")
        runs = runs[runs["created_at"] < when] if when is not None else runs.iloc[0:0]
    if runs.empty:
        raise UsageError(f"--baseline {text!r}: no stored sweep of {run.header['workload']} "
                         f"with the same parameters, dtype and device matches in "
                         f"{store.shown()}")
    newest = runs.sort_values(["created_at", "id"]).iloc[-1]
    return store.load(int(newest["id"]), "--baseline")


@dataclass(frozen=True)
class Row:
    """One line of the check: a (mode, batch size) and what was found there."""

    mode: str
    batch_size: int
    basis: str
    before_ms: float | None
    run_ms: float | None
    change: float | None
    interval: str
    verdict: str
    failed: bool
    note: str


def _interval(low, high) -> str:
    from contract import verdict as vd

    return "-" if low is None or high is None else vd.interval_text(low, high)


def baseline_rows(run: Loaded, base: Loaded, threshold: float) -> list[Row]:
    from runner.history import changes as hc

    checks = hc.check_points(base.points, run.points)
    if not checks:
        raise UsageError(f"{run.name} and the baseline {base.name} share no measured "
                         "(mode, batch size): nothing to check")
    return [Row(c.mode, c.batch_size, c.basis, c.baseline_ms, c.run_ms, c.change,
                _interval(c.ratio_low, c.ratio_high), c.verdict, c.fails(threshold),
                f"against {base.name}") for c in checks]


def series_rows(store: Store, run: Loaded, order: str, threshold: float
                ) -> tuple[list[Row], int]:
    """The run's points against the change points of its series; also how many runs the
    series holds."""
    import pandas as pd

    from runner.history import changes as hc

    runs = store.series_runs(run.header)
    points = store_points(store, runs["id"].astype(int).tolist())
    if run.run_id not in set(runs["id"].astype(int)):  # a bundle file not stored
        runs = pd.concat([runs, pd.DataFrame([{k: run.header.get(k) for k in runs.columns}])],
                         ignore_index=True)
        points = pd.concat([points, run.points], ignore_index=True)
    fig, found = hc.change_points(runs, points, order)
    mine = fig[fig["run_id"] == run.run_id]
    rows = []
    mine = mine.assign(_m=mine["mode"].map(hc.mode_key))
    for _, f in mine.sort_values(["_m", "batch_size"]).iterrows():
        one = fig[(fig["mode"] == f["mode"]) & (fig["batch_size"] == f["batch_size"])]
        at = found[(found["mode"] == f["mode"]) & (found["batch_size"] == f["batch_size"])
                   & (found["after_run"] == run.run_id)]
        if not at.empty:
            c = at.iloc[0]
            rows.append(Row(f["mode"], int(f["batch_size"]), c["basis"],
                            float(c["before_median"]), float(c["after_median"]),
                            float(c["change"]), _interval(c["ratio_low"], c["ratio_high"]),
                            c["verdict"], c["verdict"] == hc.REGRESSION
                            and float(c["change"]) > threshold,
                            f"change point: {int(c['before_runs'])} run(s) before, "
                            f"{int(c['after_runs'])} from here"))
            continue
        earlier = one[one["order"] < f["order"]]
        before = float(earlier["value"].median()) if not earlier.empty else None
        note = ("no change point at this run" if not earlier.empty
                else "first run of the series here")
        rows.append(Row(f["mode"], int(f["batch_size"]), f["basis"], before,
                        float(f["value"]), float(f["value"]) / before - 1 if before else None,
                        "-", "no change", False, note))
    return rows, len(runs)


def store_points(store: Store, ids: list[int]):
    from db import queries

    return queries.runs_points(store.engine, ids)


HEAD = ["mode", "batch", "figure", "before ms", "run ms", "change", "before/after 95%",
        "verdict", "result", "note"]


def _cells(r: Row) -> list[str]:
    def ms(v):
        return "-" if v is None else f"{v:.4g}"

    return [r.mode, str(r.batch_size), "host-normalised" if r.basis.startswith("host")
            else "measured", ms(r.before_ms), ms(r.run_ms),
            "-" if r.change is None else f"{r.change:+.1%}", r.interval, r.verdict,
            "FAIL" if r.failed else "ok", r.note]


def markdown(title: str, rows: list[Row], threshold: float, notes: list[str]) -> str:
    """The step summary: a heading, the outcome and the table."""
    failed = [r for r in rows if r.failed]
    out = [f"### {title}", "",
           (f"**{len(failed)} regression(s)** slower by more than {threshold:.1%} with "
            "the 95% interval wholly slower." if failed else
            f"No regression beyond {threshold:.1%} outside the intervals."), ""]
    out += [f"- {n}" for n in notes]
    out += ["", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(c.replace("|", "/") for c in _cells(r)) + " |" for r in rows]
    return "\n".join(out) + "\n\n"


def junit(title: str, workload: str, rows: list[Row], threshold: float) -> str:
    """JUnit XML: one testsuite, a testcase a (mode, batch size), a failure each."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name=title, tests=str(len(rows)),
                       failures=str(sum(r.failed for r in rows)), errors="0", skipped="0")
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname=f"launchbench.{workload}.{r.mode}",
                             name=f"{r.mode} batch {r.batch_size}", time="0")
        said = (f"{r.verdict}: {' '.join(_cells(r)[3:5])} ms ({_cells(r)[5]}; before/after "
                f"{r.interval}; {r.note}; on the {r.basis} step)")
        if r.failed:
            ET.SubElement(case, "failure", type="regression",
                          message=f"slower by more than {threshold:.1%}").text = said
        else:
            ET.SubElement(case, "system-out").text = said
    root = ET.Element("testsuites", name="launchbench check", tests=suite.get("tests"),
                      failures=suite.get("failures"))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def run_check(args: argparse.Namespace) -> int:
    threshold = parse_threshold(args.threshold)
    junit_path = check_out_file(args.junit) if args.junit else None
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    store = Store(args.db)
    try:
        # Two bundle files need no database; anything else reads it.
        lookup = args.series or not _looks_like_file(args.baseline)
        run = load_run(store, args.run, "--run", FILE_RUN, lookup)
        notes = []
        if args.series:
            rows, n = series_rows(store, run, args.order, threshold)
            title = f"launchbench check: {run.name} against its series"
            notes.append(f"{n} run(s) of {run.header['workload']} in the series, ordered by "
                         f"{args.order}")
            if n < 2:
                notes.append("one run in this series: nothing to check against yet")
        else:
            base = find_baseline(store, run, args.baseline)
            if base.run_id == run.run_id or base.header.get("uuid") == run.header.get("uuid"):
                raise UsageError(f"--baseline {args.baseline!r} is the run itself")
            rows = baseline_rows(run, base, threshold)
            title = f"launchbench check: {run.name} against {base.name}"
    finally:
        store.dispose()
    if any(r.basis.startswith("host") for r in rows):
        from runner.history.series import NORMALISED

        notes.append(f"host-bound points are judged on the {NORMALISED} step")
    print(title)
    for n in notes:
        print(f"  {n}")
    for line in table([HEAD] + [_cells(r) for r in rows], left=(0, 2, 7, 8, 9)):
        print(line)
    failed = sum(r.failed for r in rows)
    print(f"{failed} regression(s) beyond {threshold:.1%}" if failed
          else f"ok: no regression beyond {threshold:.1%} outside the intervals")
    if junit_path is not None:
        write_atomically(junit_path, junit(title, run.header["workload"], rows, threshold))
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown(title, rows, threshold, notes))
    return 1 if failed else 0
