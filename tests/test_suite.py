"""The suite itself: it leaves no process behind, and it collects on a GPU host that has
torch but not the dashboard's packages. Each test runs pytest in a child process (with
this suite's conftest), as a developer or the lent GPU host would."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests import procs

ROOT = Path(__file__).resolve().parents[1]

# A sitecustomize that makes packages unimportable, as on a host where they are missing.
HIDE = """
import os, sys

HIDDEN = set(os.environ["LB_HIDE"].split(","))


class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
"""


def _pytest(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 300):
    env = {**os.environ, **(env or {})}
    for var in (procs.SESSION_VAR, procs.TEST_VAR):
        env.pop(var, None)  # the child is a session of its own
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, text=True, capture_output=True, timeout=timeout)


def test_gpu_tests_collect_on_a_host_without_the_dashboard(tmp_path):
    # The lent H200: torch, pandas and pytest; no SQLAlchemy, streamlit or altair.
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    r = _pytest("-m", "gpu", "--collect-only", "-q", "-rs", env={
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "LB_HIDE": "sqlalchemy,alembic,psycopg,streamlit,altair,playwright",
        "CI": ""})  # outside CI: there a missing package is a failure, never a skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "ERROR" not in out and " error" not in out.replace("_error", ""), out
    # The GPU tests that need only torch are there to run...
    assert "tests/runner/core/test_gpu_runner.py::test_every_mode_measures_and_matches_eager" in out
    assert "tests/runner/core/test_gpu_workloads.py::" in out
    assert "tests/runner/core/test_gpu_trace.py::" in out
    # ...and a module that needs the database says so.
    assert "test_gpu_hosts.py needs sqlalchemy, which is not installed here" in out, out


def test_a_missing_package_fails_collection_in_ci(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    (tmp_path / "test_needs_db.py").write_text("import sqlalchemy\n")
    r = _pytest("-p", "tests.conftest", "--collect-only", "-q", "--rootdir", str(tmp_path),
                str(tmp_path), cwd=tmp_path, env={
                    "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
                    "LB_HIDE": "sqlalchemy", "CI": "true"})
    assert r.returncode != 0 and "No module named 'sqlalchemy'" in r.stdout, r.stdout


def test_a_typo_in_an_import_still_fails_collection():
    from tests.conftest import _missing_optional

    assert _missing_optional(ModuleNotFoundError("x", name="sqlalchemy")) is None  # here
    assert _missing_optional(ModuleNotFoundError("x", name="sqlalchemyy")) is None
    assert _missing_optional(ImportError("cannot import name 'x'")) is None


LEAKY = '''
import os, subprocess, sys
from pathlib import Path

import pytest

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
OUT = Path(os.environ["LB_LEAK_DIR"])


@pytest.fixture(scope="session")
def server():
    p = subprocess.Popen(SLEEP, start_new_session=True)
    (OUT / "fixture.pid").write_text(str(p.pid))
    yield p  # never stopped: the session's end must catch it


def test_leaves_a_daemon_behind(server):
    # A grandchild in its own session whose parent exits: re-parented to PID 1.
    spawn = ("import subprocess, sys; p = subprocess.Popen(sys.argv[1:], "
             "start_new_session=True, stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(p.pid)")
    pid = subprocess.run([sys.executable, "-c", spawn, *SLEEP], capture_output=True,
                         text=True, check=True).stdout.strip()
    (OUT / "test.pid").write_text(pid)


def test_a_session_fixture_outlives_the_test_that_started_it(server):
    assert server.poll() is None  # not killed with the first test's children
'''


def _running(pid: int) -> bool:
    return procs._running(pid)


@pytest.mark.parametrize("xdist", [[], ["-n", "2", "--dist", "loadfile"]],
                         ids=["serial", "xdist"])
def test_processes_a_test_or_a_fixture_leaves_are_killed_and_fail_the_run(tmp_path, xdist):
    # Laid out as here: the conftest in a directory under the root, not at it.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "sub" / "test_leaky.py").write_text(textwrap.dedent(LEAKY))
    r = _pytest(*xdist, "--rootdir", str(tmp_path), str(tmp_path), cwd=tmp_path,
                env={"PYTHONPATH": str(ROOT), "LB_LEAK_DIR": str(tmp_path)})
    out = r.stdout + r.stderr
    pids = {name: int((tmp_path / f"{name}.pid").read_text()) for name in ("test", "fixture")}
    try:
        # The test's daemon: killed when the test ended, with a warning naming the test.
        assert "killed 1 process(es) the test left running" in out, out
        assert f"pid {pids['test']} " in out
        # The session fixture's server: kept for the second test, killed at the
        # session's end, and the run fails.
        assert "2 passed" in out, out
        assert "processes left running at the end of the session" in out, out
        assert f"pid {pids['fixture']} " in out and r.returncode == 1, out
        end = time.monotonic() + procs.GONE_WITHIN_S
        while any(map(_running, pids.values())) and time.monotonic() < end:
            time.sleep(0.05)
        assert not any(map(_running, pids.values()))
    finally:
        procs.kill([procs.Proc(pid, "", "") for pid in pids.values()])
