"""LAUNCHBENCH_READ_ONLY=1 opens the database read-only: SQLite through a read-only URI,
PostgreSQL in READ ONLY transactions. It never creates, migrates or seeds; a missing file,
a missing schema or an old one is one clear message on the page and one line in the CLI."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from db import migrate, queries
from db.engine import ReadOnlySchemaError, make_engine
from db.samples import seed_if_empty
from pages.logic.links import RUN_VIEWS
from runner.ops.cli import main
from tests.apptest import open_app
from tests.conftest import ROOT

OLD = "0004_intervals"  # any revision before head


def _file(url: str) -> Path:
    return Path(sa.engine.make_url(url).database)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _old_database(url: str) -> None:
    engine = make_engine(url, migrate=False, read_only=False)
    migrate.upgrade(engine, OLD)
    engine.dispose()


def _revision(url: str) -> str | None:
    engine = make_engine(url, migrate=False, read_only=False)  # reads, never migrates
    try:
        return migrate.current(engine)
    finally:
        engine.dispose()


def _open_read_only(monkeypatch, url: str) -> AppTest:
    monkeypatch.setenv("LAUNCHBENCH_DB", url)
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    return open_app()


def _errors(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.error]


@pytest.fixture
def current_db(sqlite_url):
    """A current SQLite database holding the sample runs, its writer closed."""
    engine = make_engine(sqlite_url, read_only=False)
    assert seed_if_empty(engine).imported
    engine.dispose()
    return sqlite_url


# --- never creates ------------------------------------------------------------------------

def test_missing_sqlite_file_is_not_created(sqlite_url, monkeypatch):
    with pytest.raises(ReadOnlySchemaError, match="does not exist"):
        make_engine(sqlite_url, read_only=True)
    assert not _file(sqlite_url).exists()
    at = _open_read_only(monkeypatch, sqlite_url)
    errors = _errors(at)
    assert len(errors) == 1 and "does not exist" in errors[0]
    assert "read-only mode never creates" in errors[0] and "\n" not in errors[0]
    assert not _file(sqlite_url).exists()
    assert not list(_file(sqlite_url).parent.iterdir())  # no -wal, -shm or journal either


def test_missing_file_is_one_line_in_the_cli(sqlite_url, monkeypatch, capsys):
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    rc = main(["list", "--db", sqlite_url])
    _, err = capsys.readouterr()
    assert rc != 0 or err  # refused, never a traceback
    assert len(err.strip().splitlines()) == 1 and "does not exist" in err
    assert "Traceback" not in err and not _file(sqlite_url).exists()


def test_file_without_schema_gets_no_schema(sqlite_url, monkeypatch):
    _file(sqlite_url).touch()  # an empty file: a valid SQLite database with no tables
    at = _open_read_only(monkeypatch, sqlite_url)
    errors = _errors(at)
    assert len(errors) == 1 and "no launchbench schema" in errors[0]
    assert _file(sqlite_url).stat().st_size == 0
    assert _revision(sqlite_url) is None


# --- never migrates -----------------------------------------------------------------------

def test_old_schema_is_not_migrated_and_the_page_says_so(sqlite_url, monkeypatch):
    _old_database(sqlite_url)
    before = _digest(_file(sqlite_url))
    with pytest.raises(ReadOnlySchemaError, match="never migrates"):
        make_engine(sqlite_url, read_only=True)
    at = _open_read_only(monkeypatch, sqlite_url)
    errors = _errors(at)
    assert len(errors) == 1 and "\n" not in errors[0]
    assert OLD in errors[0] and migrate.head() in errors[0]
    assert "LAUNCHBENCH_READ_ONLY" in errors[0]  # says how to fix it
    assert _revision(sqlite_url) == OLD
    assert _digest(_file(sqlite_url)) == before


def test_old_postgresql_schema_is_not_migrated(pg_url):
    _old_database(pg_url)
    with pytest.raises(ReadOnlySchemaError, match="never migrates"):
        make_engine(pg_url, read_only=True)
    assert _revision(pg_url) == OLD


def test_read_only_follows_the_environment(sqlite_url, monkeypatch):
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    with pytest.raises(ReadOnlySchemaError):
        make_engine(sqlite_url)
    assert not _file(sqlite_url).exists()


# --- writes fail at the database ----------------------------------------------------------

def _write(engine) -> None:
    with engine.begin() as c:
        c.execute(sa.text("insert into environments(key, device) values ('ro-probe', 'cpu')"))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_write_through_the_read_only_engine_fails(backend, request):
    url = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url")
    make_engine(url, read_only=False).dispose()  # a current, empty schema
    engine = make_engine(url, read_only=True)
    try:
        for _ in range(3):  # pooled connections stay read-only after a rollback
            with pytest.raises(sa.exc.DBAPIError):
                _write(engine)
        with engine.connect() as c:  # reading works
            assert c.scalar(sa.text("select count(*) from environments")) == 0
        assert migrate.current(engine) == migrate.head()
    finally:
        engine.dispose()
    writable = make_engine(url, read_only=False)
    try:
        _write(writable)  # the same statement is fine on a writable engine
    finally:
        writable.dispose()


# --- pages still render ---------------------------------------------------------------------

def test_pages_render_a_current_database_read_only(current_db, monkeypatch):
    before = _digest(_file(current_db))
    at = _open_read_only(monkeypatch, current_db)
    assert not _errors(at)
    assert any("read-only share mode" in m for m in (str(e.value) for e in at.sidebar.markdown))
    ids = queries.runs_frame(make_engine(current_db, read_only=True))["id"].tolist()
    assert ids
    run_views = [("pages/run.py", {"run": str(ids[0]), "view": v}) for v in RUN_VIEWS]
    for page, params in [("pages/runs.py", {}), *run_views,
                         ("pages/compare.py", {"run": [str(i) for i in ids[:2]]}),
                         ("pages/trend.py", {}), ("pages/import.py", {}),
                         ("pages/serve.py", {}), ("pages/launch.py", {})]:
        if not (ROOT / page).is_file():
            continue
        at.switch_page(page)
        at.query_params = params
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not [e for e in _errors(at) if "database" in e.lower()], page
    assert _digest(_file(current_db)) == before
    assert _revision(current_db) == migrate.head()


@pytest.mark.parametrize("argv", [["worker", "--once"], ["worker", "--job", "1"]])
def test_a_worker_in_read_only_mode_refuses_in_one_line(current_db, monkeypatch, capsys,
                                                         argv):
    """`worker --once` in read-only mode ended in a SQLAlchemy traceback (issue 48)."""
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    before = _digest(_file(current_db))
    assert main([*argv, "--db", current_db]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "read-only share mode (LAUNCHBENCH_READ_ONLY=1): cannot run a worker" in err
    assert _digest(_file(current_db)) == before


def test_the_database_refuses_a_worker_row_in_read_only_mode(current_db, monkeypatch):
    from db import jobs
    from db.access import ReadOnlyError

    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    engine = make_engine(current_db)
    try:
        with pytest.raises(ReadOnlyError, match="cannot run a worker"):
            jobs.register_worker(engine, name="w", hostname="h", pid=1, gpu_name=None,
                                 has_cuda=False, torch_version=None)
    finally:
        engine.dispose()
