"""The command line: sweep, import, export, list, and every bad input they must refuse.

Bad input: exit 2, exactly one line on stderr naming the value, nothing written (no
database file, no bundle). Sweeps use a tiny CPU MLP so the whole file stays fast.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from contract import bundle as fmt
from runner.ops.cli import build_parser
from tests.command_line import cli
from tests.conftest import ROOT

TINY = ["--workload", "mlp", "--param", "depth=2", "--param", "width=16", "--quick",
        "--device", "cpu"]


def count(url: str, table: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(sa.text(f"select count(*) from {table}")).scalar()
    finally:
        engine.dispose()


def db_file(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


@pytest.fixture(autouse=True)
def default_db(tmp_path, monkeypatch) -> Path:
    """Point the default database at a temp file, so no test can touch data/."""
    path = tmp_path / "default.db"
    monkeypatch.setenv("LAUNCHBENCH_DB", f"sqlite:///{path}")
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY", raising=False)
    return path


def bundle_doc(**run) -> dict:
    m = fmt.empty_measurement("eager", 8)
    m.update(step_ms=1.5, samples=3, samples_ms=[1.4, 1.5, 1.7])
    return fmt.make_bundle({"device": "cpu", "torch_version": "2.13.0"},
                           {"uuid": str(uuid.uuid4()), "workload": "mlp",
                            "created_at": fmt.now_iso(), "status": "done", **run}, [m])


# --- sweep: bad input ------------------------------------------------------------------

BAD_SWEEPS = [
    # (flags replacing the defaults, text the error line must contain)
    (["--batch-sizes", "1,abc"], "'abc'"),
    (["--batch-sizes", "0"], "--batch-sizes: 0 "),
    (["--batch-sizes", "4,-8"], "-8"),
    (["--batch-sizes", "16777217"], "16777217"),
    (["--batch-sizes", "1,8,1"], "1 appears twice"),
    (["--batch-sizes", "1,,8"], "''"),
    (["--batch-sizes", "1.5"], "'1.5'"),
    (["--batch-sizes", "1,2,...,8"], "'...'"),
    (["--batch-sizes", "1,2,4,...,100"], "does not reach 100"),
    (["--batch-sizes", "1,2,3,...,65536"], "more than 256"),
    (["--modes", "eager,turbo"], "'turbo'"),
    (["--modes", "eager,eager"], "'eager' appears twice"),
    (["--modes", ""], "''"),
    (["--workload", "nosuch"], "'nosuch'"),
    (["--workload", "no_such_module_xyz:make"], "no_such_module_xyz"),
    (["--param", "depth"], "'depth'"),
    (["--param", "=3"], "'=3'"),
    (["--param", "depth=abc"], "'abc'"),
    (["--param", "depth=0"], "'0'"),
    (["--param", "colour=red"], "'colour'"),
    (["--param", "width=16"], "'width' is given twice"),
    (["--label", ""], "--label"),
    (["--processes", "0"], "--processes 0 is out of range"),
    (["--processes", "two"], "--processes 'two' is not a whole number"),
    (["--processes", "99"], "--processes 99 is out of range (1 to 16)"),
    (["--label", "a\nb"], "--label"),
    (["--timing", "thorough"], "--timing thorough"),
    (["--device", "gpu"], "'gpu'"),
    (["--db", "bogus"], "'bogus'"),
    (["--db", "mysql://x/y"], "'mysql'"),
    (["--db", "sqlite:////no/such/dir/x.db"], "/no/such/dir"),
    (["--no-db"], "--no-db without --out"),
    (["--out", "/no/such/dir/run.json"], "/no/such/dir"),
]


@pytest.mark.parametrize("flags, expected", BAD_SWEEPS,
                         ids=[" ".join(f) or "empty" for f, _ in BAD_SWEEPS])
def test_sweep_refuses_bad_input(capsys, tmp_path, default_db, flags, expected):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    out = tmp_path / "run.json"
    tiny = TINY
    if flags[0] == "--param":  # the bad --param replaces depth=2
        tiny = [a for a in TINY if a != "depth=2"]
        tiny.remove("--param")
    argv = ["sweep", *tiny, "--batch-sizes", "1,4", "--modes", "eager", "--db", url,
            "--out", str(out)]
    for i in range(0, len(flags), 2):  # a later flag wins in argparse; --param appends
        argv += flags[i:i + 2]
    if flags == ["--no-db"]:
        argv = [a for a in argv if a not in ("--out", str(out), "--db", url)] + ["--no-db"]
    rc, stdout, err = cli(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and expected in err, err
    assert "Traceback" not in err and stdout == ""
    assert not db_file(url).exists() and not default_db.exists()
    assert not out.exists()


def test_sweep_out_is_a_directory(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    rc, _, err = cli(capsys, "sweep", *TINY, "--batch-sizes", "1", "--modes", "eager",
                     "--db", url, "--out", str(tmp_path))
    assert rc == 2 and "is a directory" in err and err.count("\n") == 1
    assert not db_file(url).exists()


def test_sweep_cuda_without_cuda(capsys, tmp_path, monkeypatch):
    import torch

    # The seam: this test means the same on a GPU host, where CUDA is there.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    argv = [a for a in TINY if a not in ("--device", "cpu")]
    rc, _, err = cli(capsys, "sweep", *argv, "--device", "cuda", "--batch-sizes", "1",
                     "--modes", "eager", "--db", url)
    assert rc == 2 and "--device cuda" in err and err.count("\n") == 1
    assert not db_file(url).exists()


def test_batch_size_series_expands(capsys):
    from runner.ops.commands.sweep import parse_batch_sizes

    assert parse_batch_sizes("1,2,4,...,8192") == tuple(2 ** i for i in range(14))
    assert parse_batch_sizes("8, 16, 24, ..., 64") == (8, 16, 24, 32, 40, 48, 56, 64)
    assert parse_batch_sizes("1,3,9,...,81,100") == (1, 3, 9, 27, 81, 100)


# --- sweep: real, tiny, through SQLite and back through a bundle ------------------------

def test_sweep_roundtrip_through_db_and_bundle(capsys, tmp_path):
    url1, url2 = (f"sqlite:///{tmp_path / n}" for n in ("one.db", "two.db"))
    out = tmp_path / "run.json"
    rc, stdout, err = cli(capsys, "sweep", *TINY, "--batch-sizes", "1,4", "--modes",
                          "eager,cuda-graph", "--db", url1, "--out", str(out),
                          "--label", "round trip")
    assert rc == 0, err
    lines = stdout.splitlines()
    assert lines[0].startswith("run 1 done: 4 points (2 unsupported)"), stdout
    assert f"bundle written to {out}" in stdout
    table = lines[lines.index("bundle written to " + str(out)) + 1:]
    assert table[0].split() == ["batch", "eager", "ms", "cuda-graph", "ms", "cuda-graph", "x"]
    rows = [r for r in table[1:] if r.split()[0].rstrip("!").isdigit()]
    assert [r.split()[0].rstrip("!") for r in rows] == ["1", "4"]
    assert all(r.split()[2] == "unsupported" and r.split()[3] == "-" for r in rows)
    assert any(line.startswith("host launch cost: ") for line in table)
    assert "sweep" in err  # the progress bar went to stderr

    assert count(url1, "runs") == 1 and count(url1, "measurements") == 4
    from db.engine import make_engine
    from db.store import export_bundle

    e1 = make_engine(url1)
    stored = export_bundle(e1, 1)
    e1.dispose()
    run = stored["run"]
    assert run["status"] == "done" and run["label"] == "round trip"
    assert run["workload_params"]["depth"] == 2
    # The recorded command parses back to the same sweep.
    cmd = shlex.split(run["command"])
    assert cmd[:4] == ["python", "-m", "runner", "sweep"]
    again = build_parser().parse_args(cmd[3:])
    assert (again.batch_sizes, again.modes, again.device) == ("1,4", "eager,cuda-graph", "cpu")
    assert again.param == ["depth=2", "width=16"] and again.timing == "quick"
    eager = [m for m in stored["measurements"] if m["mode"] == "eager"]
    assert [m["status"] for m in eager] == ["ok", "ok"]
    assert all(m["step_ms"] > 0 and m["samples_ms"] for m in eager)
    graphs = [m for m in stored["measurements"] if m["mode"] == "cuda-graph"]
    assert all(m["status"] == "unsupported" and m["message"] and m["step_ms"] is None
               for m in graphs)
    # The --out bundle holds the same points as the database.
    written = fmt.read(out)
    assert written["run"]["uuid"] == run["uuid"] and written["run"]["status"] == "done"
    assert _figures(written) == _figures(stored)

    # export -> import into another database -> the same figures.
    exported = tmp_path / "exported.json"
    rc, stdout, err = cli(capsys, "export", "1", "--out", str(exported), "--db", url1)
    assert rc == 0, err
    rc, stdout, err = cli(capsys, "import", str(exported), "--db", url2)
    assert rc == 0 and stdout.startswith("imported run 1 "), (stdout, err)
    e2 = make_engine(url2)
    assert export_bundle(e2, 1) == stored
    e2.dispose()
    rc, stdout, _ = cli(capsys, "import", str(out), "--db", url2)  # same uuid: nothing new
    assert rc == 0 and stdout.startswith("already imported: run 1")
    assert count(url2, "runs") == 1 and count(url2, "measurements") == 4


def _figures(doc: dict) -> list[dict]:
    return sorted((json.loads(json.dumps(m)) for m in doc["measurements"]),
                  key=lambda m: (m["mode"], m["batch_size"]))


def test_sweep_default_db_and_compile(capsys, default_db):
    """No --db: the run lands in $LAUNCHBENCH_DB; compile is measured and compared."""
    rc, stdout, err = cli(capsys, "sweep", *TINY, "--batch-sizes", "2", "--modes",
                          "eager,compile")
    assert rc == 0, err
    assert default_db.exists() and stdout.startswith("run 1 done: 2 points\n")
    lines = stdout.splitlines()
    row = next(r for r in lines if r.split()[0].rstrip("!") == "2").split()
    assert float(row[1].rstrip("*")) > 0 and float(row[2].rstrip("*")) > 0
    # The paired speedup and its 95% interval, as stored.
    from sqlalchemy import create_engine, text

    e = create_engine(f"sqlite:///{default_db}")
    with e.connect() as c:
        sp, low, high = c.execute(text("select speedup, speedup_ci_low, speedup_ci_high "
                                       "from measurements where mode = 'compile'")).one()
    e.dispose()
    assert low <= sp <= high
    # The figures are whatever this (busy) host measured: compare the text with the same
    # formatting the table uses (2 decimals, or 2 significant digits under 0.1x).
    # An inconclusive figure (contract/verdict.py) is printed without its median;
    # marks: * noisy, # medians outside the paired interval.
    from contract import verdict as vd

    assert row[3] == ("inconclusive" if vd.inconclusive(sp, low, high)
                      else f"{vd.x_text(sp)}x")
    assert row[4].rstrip("*#") == (f"(≤{vd.x_text(high)})" if low <= 0
                                   else f"({vd.x_text(low)}-{vd.x_text(high)})")


# --- import / export / list ---------------------------------------------------------------

def test_import_is_idempotent_and_list_shows_runs(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    a = fmt.write(tmp_path / "a.json", bundle_doc(label="first run"))
    gpu = bundle_doc()
    gpu["environment"].update(device="cuda", gpu_name="NVIDIA H200", torch_version="2.11.0")
    b = fmt.write(tmp_path / "b.json", gpu)
    assert cli(capsys, "import", str(a), "--db", url)[1].startswith("imported run 1 ")
    rc, stdout, _ = cli(capsys, "import", str(a), "--db", url)
    assert rc == 0 and "already imported: run 1" in stdout
    assert cli(capsys, "import", str(b), "--db", url)[1].startswith("imported run 2 ")
    assert count(url, "runs") == 2 and count(url, "measurements") == 2
    rc, stdout, _ = cli(capsys, "list", "--db", url)
    header, *lines = stdout.splitlines()
    assert rc == 0 and len(lines) == 2
    # A header names the columns (issue 46); nothing reads "?".
    assert header.split()[:4] == ["id", "created", "(UTC)", "workload"]
    assert "key figure" in header and "memory cost" in header and "?" not in stdout
    assert {ln.split()[0] for ln in lines} == {"1", "2"}
    first = next(ln for ln in lines if ln.startswith("1 "))
    second = next(ln for ln in lines if ln.startswith("2 "))
    for text in ("mlp", " cpu ", "torch 2.13.0", "done", "first run"):
        assert text in first
    for text in ("NVIDIA H200", "torch 2.11.0"):
        assert text in second


def test_list_of_missing_database_writes_nothing(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'nope.db'}"
    rc, stdout, err = cli(capsys, "list", "--db", url)
    assert rc == 0 and stdout == "" and "does not exist" in err
    assert not db_file(url).exists()


def _truncated(tmp_path) -> Path:
    text = fmt.dumps(bundle_doc())
    p = tmp_path / "bad.json"
    p.write_text(text[: len(text) // 2])
    return p


def _with(tmp_path, mutate) -> Path:
    doc = bundle_doc()
    mutate(doc)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    return p


BAD_IMPORTS = {
    "missing": (lambda t: t / "nope.json", "does not exist"),
    "non-json": (lambda t: (t / "bad.json").write_text("hello") and t / "bad.json",
                 "not valid JSON"),
    "truncated": (_truncated, "truncated"),
    "wrong-format": (lambda t: _with(t, lambda d: d.update(format="other")),
                     "wrong format 'other'"),
    "wrong-version": (lambda t: _with(t, lambda d: d.update(version=99)), "version 99"),
    "unknown-mode": (lambda t: _with(t, lambda d: d["measurements"][0].update(mode="fast")),
                     "mode 'fast' is not one of eager"),
    "negative-time": (lambda t: _with(t, lambda d: d["measurements"][0].update(step_ms=-2.0)),
                      "step_ms -2.0 is negative"),
}


@pytest.mark.parametrize("case", BAD_IMPORTS)
def test_import_refuses_bad_files(capsys, tmp_path, default_db, case):
    make, expected = BAD_IMPORTS[case]
    path = make(tmp_path)
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    rc, stdout, err = cli(capsys, "import", str(path), "--db", url)
    assert rc == 2 and err.count("\n") == 1 and expected in err, err
    assert "bad.json" in err or "nope.json" in err  # the file is named
    assert stdout == "" and not db_file(url).exists() and not default_db.exists()


def test_import_of_a_label_no_column_takes_adds_nothing(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    good = fmt.write(tmp_path / "good.json", bundle_doc())
    assert cli(capsys, "import", str(good), "--db", url)[0] == 0
    # No column takes an object as a label: the format check names the field.
    bad = _with(tmp_path, lambda d: d["run"].update(label={"not": "text"}))
    rc, _, err = cli(capsys, "import", str(bad), "--db", url)
    assert rc == 2 and err.count("\n") == 1 and "run.label" in err
    assert count(url, "runs") == 1 and count(url, "measurements") == 1


@pytest.mark.parametrize("argv, expected", [
    (["export", "abc", "--out", "{t}/x.json"], "'abc'"),
    (["export", "0", "--out", "{t}/x.json"], "'0'"),
    (["export", "7", "--out", "{t}/x.json"], "run 7 does not exist"),
    (["export", "1", "--out", "/no/such/dir/x.json"], "/no/such/dir"),
    (["export", "1", "--out", "{t}/x.json", "--db", "sqlite:///{t}/other.db"], "other.db"),
    (["import", "{t}/good.json", "--db", "bogus"], "'bogus'"),
])
def test_export_and_import_bad_arguments(capsys, tmp_path, argv, expected):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    assert cli(capsys, "import", str(fmt.write(tmp_path / "good.json", bundle_doc())),
               "--db", url)[0] == 0
    argv = [a.replace("{t}", str(tmp_path)) for a in argv]
    if "--db" not in argv:
        argv += ["--db", url]
    rc, stdout, err = cli(capsys, *argv)
    assert rc == 2 and err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "other.db").exists()


def test_database_failing_mid_sweep_keeps_the_bundle(capsys, tmp_path, monkeypatch):
    from db import store

    real = store.add_measurement
    calls = []

    def flaky(engine, run_id, m):
        calls.append(m)
        if len(calls) == 2:
            raise sa.exc.OperationalError("INSERT", {}, Exception("disk I/O error"))
        real(engine, run_id, m)

    monkeypatch.setattr(store, "add_measurement", flaky)
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    out = tmp_path / "run.json"
    rc, _, err = cli(capsys, "sweep", *TINY, "--batch-sizes", "1,2,3", "--modes", "eager",
                     "--db", url, "--out", str(out))
    assert rc == 1 and "Traceback" not in err
    assert "the database failed during the sweep: disk I/O error" in err
    doc = fmt.read(out)
    assert doc["run"]["status"] == "failed"
    assert [m["batch_size"] for m in doc["measurements"]] == [1, 2]
    engine = sa.create_engine(url)
    with engine.connect() as c:  # the first point was committed, the run marked failed
        assert c.execute(sa.text("select status from runs")).scalar() == "failed"
    engine.dispose()
    assert count(url, "measurements") == 1


@pytest.mark.postgres
def test_sweep_and_import_through_postgresql(capsys, tmp_path, pg_url):
    rc, stdout, err = cli(capsys, "sweep", *TINY, "--batch-sizes", "1", "--modes", "eager",
                          "--db", pg_url, "--label", "on postgres")
    assert rc == 0 and stdout.startswith("run 1 done: 1 points"), err
    rc, stdout, _ = cli(capsys, "list", "--db", pg_url)
    assert rc == 0 and len(stdout.splitlines()) == 2 and "on postgres" in stdout  # + header
    # PostgreSQL enforces column sizes: the format check knows them and names the field.
    bad = _with(tmp_path, lambda d: d["run"].update(label="x" * 300))
    rc, _, err = cli(capsys, "import", str(bad), "--db", pg_url)
    assert rc == 2 and err.count("\n") == 1 and "run.label" in err
    assert count(pg_url, "runs") == 1 and count(pg_url, "environments") == 1


# --- processes: a host without SQLAlchemy, Ctrl-C ---------------------------------------

# Runs the CLI with SQLAlchemy unimportable, as on the lent GPU host.
NO_SQLALCHEMY = ("import sys; sys.modules['sqlalchemy'] = None; "
                 "from runner.ops.cli import main; sys.exit(main(sys.argv[1:]))")


def _env(tmp_path) -> dict:
    return {**os.environ, "LAUNCHBENCH_DB": f"sqlite:///{tmp_path / 'default.db'}",
            "PYTHONPATH": str(ROOT)}


def test_sweep_without_sqlalchemy_writes_the_bundle(tmp_path):
    out = tmp_path / "run.json"
    p = subprocess.run([sys.executable, "-c", NO_SQLALCHEMY, "sweep", *TINY, "--batch-sizes",
                        "1", "--modes", "eager", "--out", str(out)], cwd=tmp_path,
                       env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "database was not written" in p.stderr and "SQLAlchemy" in p.stderr
    assert fmt.read(out)["measurements"][0]["status"] == "ok"
    assert not (tmp_path / "default.db").exists()
    # Without --out there is nowhere to write: refused before measuring.
    p = subprocess.run([sys.executable, "-c", NO_SQLALCHEMY, "sweep", *TINY, "--batch-sizes",
                        "1", "--modes", "eager"], cwd=tmp_path, env=_env(tmp_path),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "SQLAlchemy" in p.stderr
    p = subprocess.run([sys.executable, "-c", NO_SQLALCHEMY, "import", str(out)],
                       cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "SQLAlchemy" in p.stderr


def test_sweep_goes_on_past_a_failing_point(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    rc, stdout, err = cli(capsys, "sweep", "--workload", "tests.gpu_models:failing",
                          "--batch-sizes", "2,3,4", "--modes", "eager", "--quick",
                          "--device", "cpu", "--db", url)
    assert rc == 0, err
    assert stdout.startswith("run 1 done: 3 points (1 error)")
    assert "planted failure at batch size 3" in err
    from db.engine import make_engine
    from db.store import export_bundle

    engine = make_engine(url)
    ms = {m["batch_size"]: m for m in export_bundle(engine, 1)["measurements"]}
    engine.dispose()
    assert ms[3]["status"] == "error" and "planted failure" in ms[3]["message"]
    assert ms[2]["status"] == ms[4]["status"] == "ok"


def _ignoring_sigint():
    """What `make test &`, nohup's shells and CI runners give a child: SIGINT ignored,
    which Python would keep; the runner must handle Ctrl-C all the same."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_cancels_and_keeps_finished_points(tmp_path, sig):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    out = tmp_path / "run.json"
    sizes = ",".join(str(n) for n in range(1, 41))
    p = subprocess.Popen([sys.executable, "-m", "runner", "sweep", "--workload",
                          "tests.gpu_models:slow", "--batch-sizes", sizes, "--modes",
                          "eager", "--quick", "--device", "cpu", "--db", url, "--out",
                          str(out)], cwd=ROOT, env={**_env(tmp_path), "LB_TEST_SLEEP": "0.01"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_ignoring_sigint)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and p.poll() is None:
            if db_file(url).exists() and _points(url) >= 1:
                break
            time.sleep(0.2)
        assert p.poll() is None, p.communicate()
        p.send_signal(sig)
        stdout, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    kept = _points(url)
    assert 1 <= kept < 40
    assert stdout.startswith(f"run 1 cancelled: {kept} points")
    engine = sa.create_engine(url)
    with engine.connect() as c:
        assert c.execute(sa.text("select status from runs")).scalar() == "cancelled"
    engine.dispose()
    doc = fmt.read(out)
    assert doc["run"]["status"] == "cancelled" and len(doc["measurements"]) == kept


def _points(url: str) -> int:
    try:
        return count(url, "measurements")
    except sa.exc.OperationalError:  # the schema is still being created
        return 0


# --- progress ------------------------------------------------------------------------------

class _Stream(__import__("io").StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [False, True], ids=["log", "terminal"])
def test_progress_shows_points_current_point_and_eta(tty):
    from contract.measurement import Measurement
    from runner.ops.progress import Progress

    stream = _Stream(tty)
    p = Progress(stream)
    p(0, 3, ("eager", 1), None)
    time.sleep(0.05)
    failed = Measurement("eager", 1, status="error", message="boom\nmore")
    p(1, 3, ("compile", 1), failed)
    p(3, 3, None, None)
    p.close()
    text = stream.getvalue()
    assert "compile batch 1" in text and "3/3" in text
    assert "eager batch 1: error: boom" in text  # a failed point is said as it happens
    if tty:
        assert "\r" in text and "point/s" in text  # the tqdm bar, redrawn in place
    else:
        lines = text.splitlines()
        assert lines[0].startswith("sweep 0/3 points") and "ETA ?" in lines[0]
        assert lines[2].startswith("sweep 1/3 points") and "ETA " in lines[2]


def test_table_prints_intervals_marks_and_falls_back_for_old_runs():
    from contract.measurement import Measurement
    from runner.ops.commands.sweep import format_table
    from tests.synthetic import sweep_bundle

    noisy = {"noisy": True, "host_unstable": True, "speedup": 7.1, "speedup_ci_low": 6.5,
             "speedup_ci_high": 7.6, "step_ms": 0.141}  # medians agree: 1.0 / 0.141 = 7.09
    new = sweep_bundle(batches=(8,), modes=("eager", "cuda-graph"),
                       overrides={("cuda-graph", 8): noisy,
                                  ("eager", 8): {"step_ms": 1.0}})["measurements"]
    text = format_table([Measurement.from_json(m) for m in new], ("eager", "cuda-graph"))
    row = text.splitlines()[1].split()
    assert row[0] == "8!" and row[2].endswith("*") and row[3:] == ["7.10x", "(6.50-7.60)*"]
    assert "host launch cost: 10.0 us" in text and "* noisy" in text and "! host" in text
    old = sweep_bundle(batches=(8,), modes=("eager", "cuda-graph"),
                       intervals=False)["measurements"]
    e, g = (m["step_ms"] for m in old)
    text = format_table([Measurement.from_json(m) for m in old], ("eager", "cuda-graph"))
    assert text.splitlines()[1].split()[-1] == f"{e / g:.2f}x"  # no interval to print
    # and no footnotes about intervals: only which statistic each column is
    assert text.splitlines()[2:] == ["ms: each mode's median step time over its own "
                                     "rounds; x: eager's median step / the mode's (no "
                                     "paired rounds in this run)"]


def test_table_says_which_statistic_and_when_they_disagree_or_are_inconclusive():
    from contract import verdict as vd
    from contract.measurement import Measurement
    from runner.ops.commands.sweep import format_table
    from tests.synthetic import sweep_bundle

    # The CPU run: compile's median step 253.5 ms against eager's 7.84 ms
    # beside a paired 0.57x: the medians' ratio (0.031x) is outside the interval.
    over = {("eager", 1): {"step_ms": 7.84},
            ("compile", 1): {"step_ms": 253.5, "speedup": 0.57, "speedup_ci_low": 0.5,
                             "speedup_ci_high": 0.6},
            ("compile", 8): {"speedup": 0.5, "speedup_ci_low": 0.0,
                             "speedup_ci_high": 111.7}}
    ms = sweep_bundle(batches=(1, 8), modes=("eager", "compile"),
                      overrides=over)["measurements"]
    text = format_table([Measurement.from_json(m) for m in ms], ("eager", "compile"))
    lines = text.splitlines()
    assert lines[1].split()[-2:] == ["0.57x", "(0.50-0.60)#"]
    # a low end at 0 bounds nothing: no '0.00-' (the pages write 'no lower bound')
    assert lines[2].split()[-2:] == ["inconclusive", "(≤111.70)"]
    assert "0.50x" not in lines[2]
    assert any(n.startswith("ms: each mode's median step time") and "paired ratios" in n
               for n in lines)
    assert vd.RULE_TEXT in lines
    assert any(n.startswith("# the ratio of the medians lies outside") for n in lines)
    agreeing = sweep_bundle(batches=(8,), modes=("eager", "compile"))["measurements"]
    assert "#" not in format_table([Measurement.from_json(m) for m in agreeing],
                                   ("eager", "compile"))


@pytest.mark.parametrize("command", [["list"], ["jobs"]])
def test_a_closed_pipe_ends_list_and_jobs_quietly(tmp_path, command):
    # `list | head -1`: the reader leaves before the writer is done. Closing our end
    # before the command prints makes that deterministic (no reliance on timing).
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    env = {**os.environ, "LAUNCHBENCH_DB": url}
    doc = fmt.write(tmp_path / "b.json", bundle_doc())
    subprocess.run([sys.executable, "-m", "runner", "import", str(doc)], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    if command == ["jobs"]:
        subprocess.run([sys.executable, "-m", "runner", "enqueue", "--workload", "mlp",
                        "--batch-sizes", "1,2", "--modes", "eager", "--quick"], cwd=ROOT,
                       env=env, check=True, capture_output=True)
    r, w = os.pipe()
    os.close(r)
    proc = subprocess.run([sys.executable, "-m", "runner", *command], cwd=ROOT, env=env,
                          stdout=w, stderr=subprocess.PIPE, text=True)
    os.close(w)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 0


def test_export_of_a_huge_id_is_the_one_line_not_found(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    assert cli(capsys, "import", str(fmt.write(tmp_path / "g.json", bundle_doc())),
               "--db", url)[0] == 0
    rc, _, err = cli(capsys, "export", "99999999999999999999", "--out",
                     str(tmp_path / "x.json"), "--db", url)
    assert rc == 2 and err == "error: run 99999999999999999999 does not exist\n"
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("tty", [False, True], ids=["log", "terminal"])
def test_progress_says_cancelled_when_a_sweep_stops_early(tty):
    from runner.ops.progress import Progress

    stream = _Stream(tty)
    p = Progress(stream)
    p(0, 3, ("eager", 1), None)
    p(1, 3, None, None)  # the sweep's last call after Ctrl-C: 1 of 3 points done
    p.close()
    assert "cancelled" in stream.getvalue() and "finished" not in stream.getvalue()


def test_progress_names_the_mode_and_phase_in_flight():
    from runner.ops.progress import Progress, describe

    assert describe(("compile", 1, "setup")) == (
        "compile batch 1: setup (compile or capture, warm-up)")
    assert describe(("2 modes", 8, "timing")) == (
        "2 modes batch 8: timing (the modes' rounds, interleaved)")
    assert describe(("eager", 64)) == "eager batch 64" and describe(None) is None
    now = iter([0.0, 0.0, 30.0, 104.0])  # t0, then one reading per call
    stream = _Stream(False)
    p = Progress(stream, clock=lambda: next(now))
    p(0, 4, ("2 modes", 1), None)
    p(0, 4, ("compile", 1, "setup"), None)   # the cold compile: named while it runs
    p(2, 4, ("2 modes", 8), None)
    lines = stream.getvalue().splitlines()
    assert lines[1] == ("sweep 0/4 points, 30s elapsed, ETA ?: compile batch 1: setup "
                        "(compile or capture, warm-up)")
    assert lines[2].startswith("sweep 2/4 points, 104s elapsed, ETA 104s")


def test_sweep_out_dash_writes_the_bundle_alone_on_stdout(tmp_path):
    """`--out -` (issue 46): the bundle is standard output's only content, so it can be
    piped; the run's own lines (its table, the progress) go to standard error. A real
    process: the redirection is of file descriptor 1, which child processes share."""
    pytest.importorskip("torch")
    env = {**os.environ, "LAUNCHBENCH_DB": f"sqlite:///{tmp_path / 'never.db'}"}
    done = subprocess.run([sys.executable, "-m", "runner", "sweep", *TINY, "--batch-sizes",
                           "1,2", "--modes", "eager", "--device", "cpu", "--no-db", "--out",
                           "-"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # the whole of stdout is one JSON document
    assert fmt.validate(doc)["run"]["status"] == "done"
    assert [m["batch_size"] for m in doc["measurements"]] == [1, 2]
    assert "done: 2 points" in done.stderr and not (tmp_path / "never.db").exists()


def test_serve_out_dash_writes_the_bundle_alone_on_stdout(tmp_path):
    pytest.importorskip("torch")
    env = {**os.environ, "LAUNCHBENCH_DB": f"sqlite:///{tmp_path / 'never.db'}"}
    done = subprocess.run([sys.executable, "-m", "runner", "serve", "--workload", "mlp",
                           "--param", "depth=2", "--param", "width=16", "--device", "cpu",
                           "--strategies", "eager", "--requests", "20", "--quick", "--no-db",
                           "--out", "-"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # written once, at the end: one document
    assert doc["run"]["kind"] == "serve" and doc["run"]["status"] == "done"
    assert "bundle written to standard output" in done.stderr
