"""First use from several processes at once (issue 29, item 4): every process that opens a
fresh database creates or migrates its schema under one lock, so none fails and no job is
lost. Real processes (the race is between processes), released together by a start file
so Python's import time does not spread them out: each says it is ready (its imports
done) with a file of its own, and the start file is written once all have, however slow
the machine (a fixed sleep for the imports stopped racing under load and passed without
testing)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

PROCESSES = 4

# Each child imports everything first, says so, then waits for the start file and runs
# `runner enqueue` in-process: the four reach the empty database within a millisecond.
CHILD = textwrap.dedent("""
    import os, pathlib, sys, time
    from runner.ops.cli import main
    go = sys.argv[1]
    pathlib.Path(sys.argv[3]).touch()  # ready: every import done
    while not os.path.exists(go):
        time.sleep(0.001)
    sys.exit(main(["enqueue", "--workload", "mlp", "--batch-sizes", "1,2",
                   "--modes", "eager", "--quick", "--db", sys.argv[2]]))
""")


@pytest.fixture
def children(spawn):
    def start(*args: str) -> subprocess.Popen:
        return spawn([sys.executable, "-c", CHILD, *args], cwd=ROOT,
                     env={**os.environ, "PYTHONPATH": str(ROOT)},
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    return start


def _release(go: Path, ready: list[Path], procs: list[subprocess.Popen]) -> None:
    """Write the start file once every child has said it is ready (a handshake, not a
    guess at how long imports take); a child that died first fails the test here."""
    end = time.monotonic() + 300
    while not all(r.exists() for r in ready):
        dead = [p.returncode for p in procs if p.poll() is not None]
        assert not dead, f"a child exited before it was ready: {dead}"
        assert time.monotonic() < end, "the children never became ready"
        time.sleep(0.01)
    go.touch()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_four_enqueues_on_a_fresh_database_all_succeed(request, tmp_path, children,
                                                       backend):
    url = (request.getfixturevalue("sqlite_url") if backend == "sqlite"
           else request.getfixturevalue("pg_url"))
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(PROCESSES)]
    procs = [children(str(go), url, str(r)) for r in ready]
    _release(go, ready, procs)
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    failed = [(rc, err.strip()[-300:]) for rc, _, err in results if rc != 0]
    assert not failed, failed

    from db import jobs
    from db.engine import make_engine

    engine = make_engine(url)
    try:
        listed = jobs.list_jobs(engine)
    finally:
        engine.dispose()
    assert len(listed) == PROCESSES  # every process's job was kept
