"""Shared fixtures: a temp SQLite file, a real PostgreSQL database, CI strictness; and
what keeps the suite apart from its host: every process a test starts ends with the test
(tests/procs.py), each test's workers get their own host lock directory, the compile
caches are the run's own (not Inductor's and Triton's defaults), and a test module
that needs the dashboard's packages skips (outside CI) on a host without them.

Starting a process from a test: plain `subprocess.Popen` / `subprocess.run`, with
`env={**os.environ, ...}` when the child needs more (never a scrubbed environment: the
inherited variables are how the child is found, and how its host paths stay the test's).
Wait for it or stop it in the test (`spawn` below stops it for you); whatever is still
running when the test ends is killed, and a process a module or session fixture leaves
behind fails the run.

Where things are: the tests of a package in the folder of the same path (tests/runner/core,
tests/contract, tests/runner/ops, tests/runner/serve, tests/db, tests/pages; the
browser tests in tests/e2e); fixtures in conftest.py files (this one for all, tests/e2e's
for the browser, tests/db's for the storage engine); shared helper modules here at the top
(synthetic bundles, fake clocks and counters, model factories, AppTest and CLI helpers),
imported as `tests.<module>`, never from a test module.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import pytest

from tests import procs

# A helper module's asserts read like a test's when they fail (pytest rewrites them on import).
pytest.register_assert_rewrite("tests.apptest")

ROOT = Path(__file__).resolve().parents[1]
# data/samples/h200-mlp.json, the run whose figures issue 37's tests quote on every page
# (h200-mlp-energy.json, a later sweep, shares its label "H200 mlp").
H200_MLP_UUID = "edde740d-b50e-4c82-bbac-4d39143e876a"
# data/samples/h100-mlp.json: the default mlp sweep on the H100, bundle version 7 (memory
# measured by the isolated pass).
H100_MLP_UUID = "f7b02541-70ce-4943-9867-08e41caebdf7"
# data/samples/h200-mlp-energy.json: the default mlp sweep on the H200 of 2026-12-05 (bundle
# version 6, a host slower than the H100's), and h200-mlp-default.json, the same sweep
# from the tree and night of the H100's (version 7, hosts alike).
H200_MLP_ENERGY_UUID = "cd5aa023-bc3e-4cb5-9cb9-ef85cc505eb8"
H200_MLP_DEFAULT_UUID = "cbff278b-b140-455b-8d2c-91151fb58e32"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# What a GPU host may lack: the lent H200 has torch, pandas and pytest, not the database's
# or the dashboard's packages. A test module importing one of these skips there.
OPTIONAL = ("sqlalchemy", "alembic", "psycopg", "streamlit", "altair", "pandas",
            "vl_convert", "playwright", "tqdm")
HOST_DIR_VAR = "LAUNCHBENCH_HOST_DIR"  # runner/core/host_gate.py's DIR_VAR (torch-free)


def must_skip(reason: str) -> None:
    """Skip locally; in CI a test that would skip is a failure (nothing may hide there)."""
    if IN_CI:
        pytest.fail(f"CI=true: refusing to skip: {reason}")
    pytest.skip(reason)


# --- apart from the host ------------------------------------------------------------------

_token = ""
_test_numbers = itertools.count()


def pytest_configure(config):
    global _token
    _token = procs.start_session()  # per process: each xdist worker checks its own
    # A plugin, not conftest hooks: pytest asks a conftest only about the nodes under its
    # directory, and a session fixture's node is the session, at the root.
    config.pluginmanager.register(_Ownership(), "launchbench-process-ownership")


class _Ownership:
    """Which test a child belongs to (tests/procs.py)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        with procs.owned_by(item.nodeid):  # setup, call and teardown: the test's children
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        # A module or session fixture's server outlives the test that first asked for
        # it: not that test's to kill. It is checked at the session's end instead.
        if fixturedef.scope == "function":
            return (yield)
        with procs.owned_by(None):
            return (yield)


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_running():
    """Fails the run when a process this session started is still running at its end
    (a fixture that did not stop its server); kills them first."""
    yield
    _stop_compile_workers()
    left = procs.ours(_token)
    if left:
        procs.kill(left)
        pytest.fail("processes left running at the end of the session (killed now): "
                    + "; ".join(map(str, left)), pytrace=False)


def _stop_compile_workers() -> None:
    """torch.compile's pool of Inductor compile workers belongs to this pytest process and
    ends with it (torch stops it at exit); stop it as torch would before looking for
    leftovers. On the H200 (16 cores) the GPU tests left 17 such workers to the check."""
    async_compile = sys.modules.get("torch._inductor.async_compile")  # never import torch
    if async_compile is not None and hasattr(async_compile, "shutdown_compile_workers"):
        async_compile.shutdown_compile_workers()


def _forget_the_gate() -> None:
    """The process's host gate is read from the environment once and kept (one CLI call, one
    gate): a test that ran a sweep before would hand its gate, or its lack of one, to the
    next test in this worker, whose own LAUNCHBENCH_HOST_POLICY then went unread (seen as
    test_sweep_refuses_a_bad_host_policy_from_the_environment passing alone and failing
    beside others)."""
    gate = sys.modules.get("runner.core.host_gate")  # only if a test imported it
    if gate is not None:
        gate.install(None)


@pytest.fixture(autouse=True, scope="session")
def _compile_caches_apart(tmp_path_factory):
    """Inductor's and Triton's on-disk caches in this run's temp directory (one per xdist
    worker, warm across its tests as the defaults would be), never the host's defaults
    ($TMPDIR/torchinductor_$USER, ~/.triton/cache): a real sweep on this host reads and
    fills those, and a graph a test left there would be its cache hit. Tests that need
    an empty cache set their own (monkeypatch), as before. Left alone: a CPU compile's
    precompiled C++ headers, which torch keeps under its default directory whatever
    these say (torch._inductor.codecache._HEADER_DIR); they hold no compiled graph."""
    base = tmp_path_factory.getbasetemp() / "compile-caches"
    before = {v: os.environ.get(v) for v in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(base / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(base / "triton")
    yield
    for var, value in before.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


@pytest.fixture(autouse=True)
def _apart_from_the_host(request, tmp_path_factory):
    """Each test's workers time under their own host lock, never the machine's default
    ($TMPDIR/launchbench-host, which a real worker on this host may hold); whatever the
    test started and left running is killed when it ends, pass or fail."""
    lock_dir = tmp_path_factory.getbasetemp() / "host-lock" / str(next(_test_numbers))
    before = os.environ.get(HOST_DIR_VAR)
    os.environ[HOST_DIR_VAR] = str(lock_dir)  # created by the first worker that uses it
    _forget_the_gate()
    try:
        yield
    finally:
        _forget_the_gate()
        if before is None:
            os.environ.pop(HOST_DIR_VAR, None)
        else:
            os.environ[HOST_DIR_VAR] = before
        left = procs.reap(_token, request.node.nodeid)
        if left:
            warnings.warn(pytest.PytestWarning(
                f"killed {len(left)} process(es) the test left running: "
                + "; ".join(map(str, left))), stacklevel=1)


@pytest.fixture
def spawn():
    """`spawn(argv, **popen_kwargs)`: a `subprocess.Popen` in a session of its own, so that
    it and whatever it starts are one process group. Every group still running when the
    test ends is killed, quietly: a failed assertion leaves no child behind (what the
    autouse reaper above would kill too, but with a warning meant for a forgotten one)."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str], **popen_kwargs) -> subprocess.Popen:
        p = subprocess.Popen(argv, start_new_session=True, **popen_kwargs)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:  # gone between the poll and the kill
                pass
        p.wait()


class _Module(pytest.Module):
    def _getobj(self):
        try:
            return super()._getobj()
        except self.CollectError as e:
            missing = _missing_optional(e.__cause__)
            if missing is None or IN_CI:
                raise
            raise pytest.skip.Exception(
                f"{self.path.name} needs {missing}, which is not installed here (pip install -r "
                "requirements.txt)", allow_module_level=True) from None


def _missing_optional(error: BaseException | None) -> str | None:
    """The optional package whose absence `error` reports, or None for any other error
    (a typo in an import must still fail collection)."""
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    top = error.name.split(".")[0]
    if top not in OPTIONAL:
        return None
    try:
        return None if importlib.util.find_spec(top) is not None else top
    except (ImportError, ValueError):
        return top


def pytest_pycollect_makemodule(module_path, parent):
    return _Module.from_parent(parent, path=module_path)


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return  # nothing to decide: no need to import torch
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs CUDA: run on a GPU host (pytest -m gpu)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'launchbench.db'}"


@pytest.fixture
def app_db_url(sqlite_url, monkeypatch):
    """A temp SQLite file the dashboard (AppTest) uses, in writable mode."""
    monkeypatch.setenv("LAUNCHBENCH_DB", sqlite_url)
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY", raising=False)
    return sqlite_url


@pytest.fixture
def dash(app_db_url):
    """The dashboard over a temp database (tests/apptest.py's Dash), disposed
    after."""
    from tests.apptest import Dash

    d = Dash(app_db_url)
    yield d
    d.engine.dispose()


@pytest.fixture
def sqlite_engine(sqlite_url):
    from db.engine import make_engine

    engine = make_engine(sqlite_url)
    yield engine
    engine.dispose()


# --- PostgreSQL: the server the machine runs, or a throwaway cluster we start ----------

def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_throwaway_cluster() -> tuple[str, callable]:
    """initdb + pg_ctl from Debian's postgresql in a temp dir, on a free local port."""
    bindirs = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if not bindirs:
        raise RuntimeError("no PostgreSQL server answers on 127.0.0.1:5432 and Debian's "
                           "postgresql is not installed (apt-get install postgresql)")
    bindir = bindirs[-1]
    datadir = Path(tempfile.mkdtemp(prefix="lb-pg-"))
    port = free_port()
    # initdb refuses to run as root: run the cluster as the postgres user then.
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(datadir, "postgres", "postgres")
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(datadir), "-A", "trust",
                    "-U", "postgres"], check=True, capture_output=True)
    subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(datadir), "-w", "-l",
                    str(datadir / "log"), "-o", f"-p {port} -k {datadir} -h 127.0.0.1",
                    "start"], check=True, capture_output=True)

    def stop():
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "fast",
                        "stop"], capture_output=True)
        shutil.rmtree(datadir, ignore_errors=True)

    return f"postgresql+psycopg://postgres@127.0.0.1:{port}", stop


@pytest.fixture(scope="session")
def pg_server():
    """Base URL (no database) of a PostgreSQL server with trust auth."""
    explicit = os.environ.get("LAUNCHBENCH_TEST_PG")
    if explicit:
        yield explicit.rstrip("/")
        return
    if _answers("127.0.0.1", 5432):
        yield "postgresql+psycopg://postgres@127.0.0.1:5432"
        return
    try:
        base, stop = _start_throwaway_cluster()
    except (RuntimeError, subprocess.CalledProcessError, FileNotFoundError) as e:
        must_skip(f"no PostgreSQL: {e}")
    try:
        yield base
    finally:
        stop()


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty database on the real server, dropped afterwards."""
    import sqlalchemy as sa

    name = f"lb_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(f"{pg_server}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as c:
            c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as e:
        admin.dispose()
        must_skip(f"PostgreSQL at {pg_server} refused: {e}")
    yield f"{pg_server}/{name}"
    for _ in range(3):
        try:
            with admin.connect() as c:
                c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            break
        except sa.exc.OperationalError:
            time.sleep(0.5)
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def any_url(request):
    """Run a test against both backends."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("pg_url")
