"""`python -m runner check` (issue 40): exit codes 0, 1 and 2, the table, the Markdown step
summary and the JUnit XML, over real SQLite files of synthetic runs and bundle files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from contract import bundle as fmt
from db.engine import make_engine
from db.store import import_bundle
from tests.command_line import cli
from tests.synthetic import sweep_bundle

BATCHES, MODES = (8, 64), ("eager", "cuda-graph")


@pytest.fixture(autouse=True)
def default_db(tmp_path, monkeypatch) -> Path:
    """No test may touch data/ nor a summary file of the host's."""
    path = tmp_path / "default.db"
    monkeypatch.setenv("LAUNCHBENCH_DB", f"sqlite:///{path}")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return path


def _doc(day: int, scale: float = 1.0, torch: str = "2.5.1", **kw) -> dict:
    return sweep_bundle(batches=BATCHES, modes=MODES, scale=scale, torch=torch,
                        created_at=f"2026-01-{day:02d}T00:00:00+00:00", **kw)


@pytest.fixture
def db(tmp_path):
    """A database of one series: four quiet runs, then a fifth 20% slower; and a run of
    another GPU. Returns (url, ids in date order)."""
    url = f"sqlite:///{tmp_path / 'team.db'}"
    engine = make_engine(url)
    try:
        ids = [import_bundle(engine, _doc(d, torch=t))[0]
               for d, t in ((1, "2.4.0"), (2, "2.5.1"), (3, "2.5.1"), (4, "2.6.0"))]
        ids.append(import_bundle(engine, _doc(5, scale=1.2, torch="2.7.0",
                                              label="nightly"))[0])
        import_bundle(engine, _doc(6, gpu="Other GPU"))
    finally:
        engine.dispose()
    return url, ids


def test_a_slower_run_fails_against_its_baseline(capsys, db, tmp_path):
    url, ids = db
    rc, out, err = cli(capsys, "check", "--db", url, "--run", str(ids[4]),
                       "--baseline", str(ids[3]))
    assert rc == 1, err
    lines = out.splitlines()
    assert lines[0] == f"launchbench check: run {ids[4]} against run {ids[3]}"
    rows = [ln for ln in lines if ln.startswith(("eager", "cuda-graph"))]
    assert len(rows) == 4 and all("+20.0%" in r and "regression" in r and "FAIL" in r
                                  for r in rows)
    assert lines[-1] == "4 regression(s) beyond 5.0%"
    # Above the threshold nothing fails: the same regressions, exit 0.
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[4]),
                     "--baseline", str(ids[3]), "--threshold", "25%")
    assert rc == 0 and "regression" in out and "FAIL" not in out


def test_a_run_like_its_baseline_passes(capsys, db):
    url, ids = db
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                     str(ids[2]))
    assert rc == 0
    assert "within noise" not in out  # the change verdict, not the rule's word
    assert out.splitlines()[-1] == "ok: no regression beyond 5.0% outside the intervals"
    assert "FAIL" not in out and out.count("inconclusive") == 4


def test_an_improvement_passes(capsys, db):
    url, ids = db
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[3]),
                     "--baseline", str(ids[4]))
    assert rc == 0 and out.count("improvement") == 4 and "-16.7%" in out


@pytest.mark.parametrize("query, expected", [("previous", 3), ("torch=2.5.1", 2),
                                              ("torch=2.4.0,gpu=Synthetic GPU", 0)])
def test_a_baseline_query_picks_the_newest_match_in_the_series(capsys, db, query, expected):
    url, ids = db
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[4]), "--baseline", query)
    assert rc == 1
    assert out.splitlines()[0].endswith(f"against run {ids[expected]}")


def test_bundle_files_need_no_database(capsys, tmp_path, default_db):
    base, run = tmp_path / "base.json", tmp_path / "run.json"
    fmt.write(base, _doc(1))
    fmt.write(run, _doc(2, scale=1.3))
    rc, out, err = cli(capsys, "check", "--run", str(run), "--baseline", str(base))
    assert rc == 1, err
    assert out.splitlines()[0] == f"launchbench check: {run} against {base}"
    assert not default_db.exists()  # two files: no database opened, none created


def test_series_finds_the_change_at_the_newest_run(capsys, db, tmp_path, monkeypatch):
    url, ids = db
    summary = tmp_path / "step_summary"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "check.xml"
    rc, out, err = cli(capsys, "check", "--db", url, "--run", str(ids[4]), "--series",
                       "--junit", str(junit))
    assert rc == 1, err
    assert "5 run(s) of mlp in the series (one machine: Synthetic GPU), ordered by date" in out
    assert out.count("change point: 4 run(s) before, 1 from here") == 4
    # The summary is appended, with the table.
    md = summary.read_text(encoding="utf-8")
    assert md.startswith("earlier step\n### launchbench check: run")
    assert "**4 regression(s)**" in md and "| mode | batch |" in md
    assert md.count("| FAIL |") == 4
    # JUnit: one testcase a point and mode, a failure each regression.
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "4")
    cases = suite.findall("testcase")
    assert sorted(c.get("name") for c in cases) == [
        "cuda-graph batch 64", "cuda-graph batch 8", "eager batch 64", "eager batch 8"]
    assert all(c.find("failure") is not None for c in cases)
    assert "+20.0%" in cases[0].find("failure").text


def test_series_of_a_quiet_run_passes_with_passing_testcases(capsys, db, tmp_path):
    url, ids = db
    junit = tmp_path / "check.xml"
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--series",
                     "--junit", str(junit))
    assert rc == 0
    assert out.count("no change point at this run") == 4
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "0" and len(suite.findall("testcase")) == 4
    assert not [c for c in suite.findall("testcase") if c.find("failure") is not None]


def test_series_takes_a_bundle_file_not_yet_stored(capsys, db, tmp_path):
    url, ids = db
    new = tmp_path / "new.json"
    fmt.write(new, _doc(9, scale=1.5, torch="2.8.0"))
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(new), "--series")
    assert rc == 1 and "6 run(s) of mlp in the series (one machine" in out


@pytest.mark.parametrize("argv, expected", [
    (["--run", "999", "--baseline", "1"], "--run 999: no such run in"),
    (["--run", "abc", "--baseline", "1"], "--run 'abc' is neither a run id nor a bundle file"),
    (["--run", "5", "--baseline", "color=red"], "unknown key 'color'; keys: torch, label, gpu"),
    (["--run", "5", "--baseline", "torch"],
     "--baseline 'torch' is neither a run id nor a bundle file, 'previous' nor KEY=VALUE"),
    (["--run", "5", "--baseline", "torch=1,x"], "'x' is not KEY=VALUE"),
    (["--run", "5", "--baseline", "torch=9.9"], "--baseline 'torch=9.9': no stored sweep"),
    (["--run", "5", "--baseline", "5"], "--baseline '5' is the run itself"),
    (["--run", "5", "--baseline", "4", "--threshold", "-3"],
     "--threshold '-3' is not a percentage"),
    (["--run", "5", "--baseline", "4", "--threshold", "nan"],
     "--threshold 'nan' is not a percentage"),
    (["--run", "5", "--baseline", "4", "--threshold", "5000"],
     "--threshold '5000' is not a percentage"),
    (["--run", "missing.json", "--baseline", "4"], "bundle file 'missing.json' does not exist"),
    (["--run", "5", "--baseline", "4", "--junit", "no/such/dir/x.xml"],
     "--junit 'no/such/dir/x.xml': directory 'no/such/dir' does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, db, tmp_path, monkeypatch, argv, expected):
    url, _ = db
    monkeypatch.chdir(tmp_path)
    summary = tmp_path / "step_summary"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, err = cli(capsys, "check", "--db", url, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and expected in err, err
    assert not summary.exists()  # nothing half-written


def test_bad_input_writes_no_junit(capsys, db, tmp_path):
    url, _ = db
    junit = tmp_path / "out.xml"
    rc, _, _ = cli(capsys, "check", "--db", url, "--run", "999", "--baseline", "1",
                   "--junit", str(junit))
    assert rc == 2 and not junit.exists()


def test_a_missing_database_is_exit_2_and_not_created(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'nope.db'}"
    rc, _, err = cli(capsys, "check", "--db", url, "--run", "1", "--series")
    assert rc == 2 and "does not exist" in err and not (tmp_path / "nope.db").exists()


def test_a_serve_bundle_is_refused(capsys, tmp_path):
    doc = _doc(1)
    doc["run"]["kind"] = "graph-memory"
    path = tmp_path / "gm.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rc, _, err = cli(capsys, "check", "--run", str(path), "--baseline", str(path))
    assert rc == 2 and str(path) in err


# --- issue 48: nothing the flags or the environment carry ends in a traceback ----------

def _no_ok(rc, out, err, expected):
    assert rc == 2, (out, err)
    assert "ok" not in out and "Traceback" not in err
    assert err.count("\n") == 1 and expected in err, err


@pytest.mark.parametrize("baseline, expected", [
    ("gpu=*", "--baseline 'gpu=*': no stored sweep of 'mlp'"),
    ('gpu=x" OR 1=1--', "no stored sweep"),
    ("torch=1; DROP TABLE runs", "no stored sweep"),
    ("x" * 5000, "is 5,000 characters"),
    ("previous\n", "control characters"),
])
def test_a_baseline_query_it_cannot_use_is_exit_2(capsys, db, baseline, expected):
    url, ids = db
    _no_ok(*cli(capsys, "check", "--db", url, "--run", str(ids[4]), "--baseline", baseline),
           expected)


@pytest.mark.parametrize("junit, expected", [
    ("/proc/x.xml", "--junit '/proc/x.xml': cannot be written"),
    ("x" * 300 + ".xml", "the file name is too long"),
    ("", "--junit '' is empty"),
])
def test_a_junit_path_it_cannot_write_is_exit_2_before_any_ok(capsys, db, tmp_path,
                                                             monkeypatch, junit, expected):
    url, ids = db
    monkeypatch.chdir(tmp_path)
    _no_ok(*cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                str(ids[2]), "--junit", junit), expected)


@pytest.mark.parametrize("where, expected", [
    (lambda t: "/nonexistent/dir/s.md", "directory '/nonexistent/dir' does not exist"),
    (lambda t: str(t), "is a directory"),
])
def test_a_step_summary_it_cannot_write_is_exit_2(capsys, db, tmp_path, monkeypatch, where,
                                                 expected):
    url, ids = db
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", where(tmp_path))
    _no_ok(*cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                str(ids[2])), expected)


def test_junit_to_a_device_or_fifo_is_refused_and_never_replaces_it(capsys, db, tmp_path):
    """As root (CI often is), `--junit /dev/null` turned /dev/null into a file: here a
    FIFO and a character device made in the temp dir stand in for it."""
    import os
    import stat

    url, ids = db
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        null.symlink_to("/dev/null")
    for path, kind in ((fifo, "a FIFO"), (null, "a character device")):
        _no_ok(*cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                    str(ids[2]), "--junit", str(path)), kind)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and stat.S_ISCHR(os.stat(null).st_mode)


def test_junit_to_standard_output_keeps_the_table_apart(capsys, db):
    url, ids = db
    rc, out, err = cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                       str(ids[2]), "--junit", "-")
    assert rc == 0, err
    root = ET.fromstring(out.split("\n", 1)[1])  # after the XML declaration
    assert root.find("testsuite").get("tests") == "4"
    assert err.splitlines()[-1].startswith("ok: ")


def test_a_check_through_a_symlink_writes_its_target(capsys, db, tmp_path):
    url, ids = db
    target = tmp_path / "reports" / "check.xml"
    target.parent.mkdir()
    link = tmp_path / "check.xml"
    link.symlink_to(target)
    rc, _, err = cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                     str(ids[2]), "--junit", str(link))
    assert rc == 0, err
    assert link.is_symlink() and ET.parse(target).getroot().tag == "testsuites"


@pytest.mark.parametrize("argv, expected", [
    (["--out", "/proc/x.json"], "--out '/proc/x.json': cannot be written"),
    (["--out", ""], "--out '' is empty"),
    (["--out", "/nonexistent/x.json"], "directory '/nonexistent' does not exist"),
])
def test_export_to_a_path_it_cannot_write_is_exit_2(capsys, db, argv, expected):
    url, ids = db
    rc, out, err = cli(capsys, "export", str(ids[0]), "--db", url, *argv)
    assert rc == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and expected in err, err


def test_export_to_standard_output(capsys, db):
    url, ids = db
    rc, out, err = cli(capsys, "export", str(ids[0]), "--db", url, "--format",
                       "pytorch-benchmark", "--out", "-")
    assert rc == 0, err
    records = json.loads(out)
    assert records and all(r["benchmark"]["name"] == "launchbench" for r in records)
    assert "pytorch-benchmark records" in err
    rc, out, err = cli(capsys, "export", str(ids[0]), "--db", url, "--out", "-")
    assert rc == 0 and fmt.loads(out)["run"]["uuid"] and "exported run" in err


def test_whatever_breaks_inside_check_is_one_line_and_exit_2(capsys, db, monkeypatch):
    """A fault no test foresaw: still not a traceback, which CI reads as exit 1."""
    from runner.history import changes

    url, ids = db

    def broken(*a, **k):
        raise KeyError("id")

    monkeypatch.setattr(changes, "check_points", broken)
    rc, out, err = cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                       str(ids[2]))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "check failed (KeyError: 'id')" in err


# --- issue 47: a gate that says what it cannot see ---------------------------------------

CPU_SAMPLES = sorted((Path(__file__).resolve().parents[3] / "data" / "samples")
                     .glob("cpu-mlp-torch-*.json"))


@pytest.fixture
def cpu_series(tmp_path):
    """The shipped CPU runs of one machine (torch 2.10 to 2.13): intervals of a
    shared host, wide. Returns (url, ids in torch order)."""
    url = f"sqlite:///{tmp_path / 'cpu.db'}"
    engine = make_engine(url)
    try:
        ids = [import_bundle(engine, fmt.read(p))[0] for p in CPU_SAMPLES]
    finally:
        engine.dispose()
    return url, ids


def _rows(out: str) -> dict[tuple[str, str], str]:
    return {tuple(line.split()[:2]): line for line in out.splitlines()
            if line.split()[:1] and line.split()[0] in ("eager", "compile")}


@pytest.mark.parametrize("how", [["--series"], ["--baseline", "previous"]])
def test_a_noisy_series_cannot_tell_and_exits_3(capsys, cpu_series, tmp_path, monkeypatch,
                                                how):
    """The issue's case: +48.4% at eager batch 8 read 'no change ... ok' and exit 0."""
    url, ids = cpu_series
    summary = tmp_path / "step_summary"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "check.xml"
    rc, out, err = cli(capsys, "check", "--db", url, "--run", str(ids[-1]), *how,
                       "--junit", str(junit))
    assert rc == 3, err
    rows = _rows(out)
    assert "+48.4%" in rows[("eager", "8")] if how == ["--series"] else True
    assert all("cannot tell" in line for line in rows.values()), out
    assert " ok " not in out and out.splitlines()[-1].startswith("cannot tell: 6 of 6")
    # The summary and the JUnit say so too: a skipped testcase with its reason each.
    assert "**Cannot tell** at 6 of 6 point(s)" in summary.read_text()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("skipped"), suite.get("failures")) == ("6", "0")
    for case in suite.findall("testcase"):
        skipped = case.find("skipped")
        assert skipped is not None and skipped.get("message").startswith("cannot tell: ")
        assert "threshold" in skipped.get("message")


def test_each_point_says_the_smallest_change_it_could_see(capsys, db):
    url, ids = db
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[3]), "--baseline",
                     str(ids[2]))
    assert rc == 0
    assert "sees from" in out.splitlines()[2]
    # Two runs each +-1%: a slowdown shows from 1.01 / 0.99 - 1 = +2.0%.
    assert all(" +2.0%" in line and line.rstrip().endswith(f"against run {ids[2]}")
               and " ok " in line for line in _rows(out).values()), out


def test_a_threshold_the_noise_can_see_turns_cannot_tell_into_ok(capsys, cpu_series):
    url, ids = cpu_series
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[-1]), "--baseline",
                     "previous", "--threshold", "1000")
    seen = [line for line in _rows(out).values() if " none " not in line]
    assert seen and all(line.split()[-4:-3] != ["cannot"] for line in seen)
    assert rc == 3  # the points without an interval still cannot tell


def test_a_regression_is_exit_1_whatever_else_cannot_tell(capsys, db, tmp_path):
    url, ids = db
    noisy = tmp_path / "noisy.json"
    doc = _doc(9, scale=1.3, torch="2.8.0")
    for m in doc["measurements"]:
        if (m["mode"], m["batch_size"]) == ("eager", 64):  # no interval: cannot tell
            m.update(step_ms_ci_low=None, step_ms_ci_high=None)
    fmt.write(noisy, doc)
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(noisy), "--baseline",
                     str(ids[3]))
    assert rc == 1 and "cannot tell" in _rows(out)[("eager", "64")]
    assert out.splitlines()[-1] == "3 regression(s) beyond 5.0%"


def test_the_first_run_of_a_series_cannot_tell(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'one.db'}"
    engine = make_engine(url)
    rid = import_bundle(engine, _doc(1))[0]
    engine.dispose()
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(rid), "--series")
    assert rc == 3 and "first run of the series here" in out


def test_torch_matches_the_release_without_its_local_suffix(capsys, cpu_series):
    url, ids = cpu_series
    for query in ("torch=2.10", "torch=2.10.0", "torch=2.10.0+cu128"):
        rc, out, err = cli(capsys, "check", "--db", url, "--run", str(ids[-1]),
                           "--baseline", query)
        assert rc in (0, 3), err
        assert out.splitlines()[0].endswith(f"against run {ids[0]}"), (query, out)
    rc, _, err = cli(capsys, "check", "--db", url, "--run", str(ids[-1]), "--baseline",
                     "torch=2.1")  # 2.1 is not 2.10
    assert rc == 2 and "no stored sweep" in err


def test_a_run_of_another_machine_is_named_apart_not_joined(capsys, cpu_series, tmp_path):
    """A CPU run from another host joined the shipped CPU series silently."""
    url, ids = cpu_series
    other = fmt.read(CPU_SAMPLES[-1])
    other = json.loads(fmt.dumps(other))
    other["run"]["uuid"] = "another-machine"
    other["run"]["created_at"] = other["run"]["finished_at"] = "2026-12-05T18:00:00+00:00"
    other["environment"]["cpu_model"] = "Intel(R) Xeon(R) Gold 6330"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    engine = make_engine(url)
    moved = import_bundle(engine, fmt.read(path))[0]
    engine.dispose()
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(ids[-1]), "--series")
    assert "4 run(s) of mlp in the series (one machine: CPU · AMD EPYC)" in out
    assert "left out, another machine: CPU · Intel(R) Xeon(R) Gold 6330" in out
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(moved), "--series")
    assert "1 run(s) of mlp in the series" in out and rc == 3
    rc, out, _ = cli(capsys, "check", "--db", url, "--run", str(moved), "--series",
                     "--mix-machines")
    assert "5 run(s) of mlp in the series (machines with this GPU)" in out
    rc, out, err = cli(capsys, "check", "--db", url, "--run", str(moved), "--baseline",
                       "previous")  # none earlier on its own machine
    assert rc == 2 and "same parameters, dtype and machine (GPU, host CPU, driver)" in err


def test_the_step_summary_shows_a_runs_text_as_text(capsys, tmp_path, monkeypatch):
    """A run's name (a file name, a bundle's workload) reaches the GitHub step summary,
    which GitHub renders as Markdown: shown as text, an image fetches nothing."""
    summary = tmp_path / "step_summary"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base, run = tmp_path / "base.json", tmp_path / "![p](http:x.invalid|y).json"
    fmt.write(base, _doc(1))
    fmt.write(run, _doc(2))
    rc, _, err = cli(capsys, "check", "--run", str(run), "--baseline", str(base))
    assert rc == 0, err
    title = summary.read_text().splitlines()[0]
    assert title.startswith("### launchbench check: ") and r"!\[p\](http:" in title
    assert "![p](" not in summary.read_text()
