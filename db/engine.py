"""The engine factory: one place that turns a database URL into a ready, migrated engine."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy.exc
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

DEFAULT_URL = "sqlite:///data/launchbench.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000


class DatabaseError(RuntimeError):
    """A database URL that cannot be used. str() is one line naming the URL; `advice` is
    what the user can do about it (the dashboard shows both on one line)."""

    advice = "Set LAUNCHBENCH_DB to a usable database URL and restart."


class ReadOnlySchemaError(DatabaseError):
    """Read-only mode met a database it may not fix: a missing file, no schema, or a schema
    older (or newer) than this launchbench's. Nothing was written."""

    advice = ("Open it once without LAUNCHBENCH_READ_ONLY (or run any writable launchbench "
              "command on it) to create or upgrade its schema, then restart.")


def default_url() -> str:
    return os.environ.get("LAUNCHBENCH_DB") or DEFAULT_URL


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the dashboard read while a sweep writes; foreign keys are off by default in
    # SQLite; the busy timeout makes concurrent writers (workers) wait instead of failing.
    cur = dbapi_connection.cursor()
    switch_to_wal(cur)
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.close()


WAL_TRIES = SQLITE_BUSY_TIMEOUT_MS // 10  # 10 ms apart: as long as the busy timeout


def switch_to_wal(cur: Any, sleep: Callable[[float], None] = time.sleep) -> None:
    """PRAGMA journal_mode=WAL, retried while SQLite answers "database is locked".

    On a file not yet in WAL mode the switch reads the header, then takes the write lock;
    a connection that loses that upgrade to another one (several processes opening a
    fresh database at once) gets "database is locked" at once, without the busy timeout
    (SQLite's deadlock avoidance), where it would otherwise have waited. The winner's
    switch takes milliseconds, after which the file is in WAL mode and the pragma writes
    nothing. Seen once in a full test run (tests/db/test_schema_race.py) and once among
    1,080 `runner enqueue` processes opening fresh files eight at a time; the case
    itself is tests/db/test_store.py's."""
    for tries_left in range(WAL_TRIES, 0, -1):
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or tries_left == 1:
                raise
            sleep(0.01)


def _sqlite_read_only_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # No journal_mode change (that is a write); query_only refuses writes even if the
    # file's permissions would allow them.
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA query_only=ON")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.close()


def _pg_read_only(dbapi_connection: Any, _record: Any) -> None:
    # Every transaction of this session is READ ONLY. SET is transactional in PostgreSQL:
    # commit it, or the pool's reset-on-return rollback would undo it.
    cur = dbapi_connection.cursor()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cur.close()
    dbapi_connection.commit()


def _sqlite_read_only_creator(path: Path) -> Callable[[], sqlite3.Connection]:
    """Connections through SQLite's read-only URI: the file is never created or written."""
    uri = f"{path.resolve().as_uri()}?mode=ro"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
                               check_same_thread=False)

    return connect


def _check_schema(engine: Engine, shown: str) -> None:
    """Read-only: the schema must already be this launchbench's newest; never migrate."""
    from db.migrate import current, head

    have, want = current(engine), head()
    if have is None:
        raise ReadOnlySchemaError(f"database {shown!r} has no launchbench schema, and "
                                  "read-only mode never creates one")
    if have != want:
        raise ReadOnlySchemaError(f"database {shown!r} has schema revision {have!r}, this "
                                  f"launchbench needs {want!r}, and read-only mode never "
                                  "migrates")


def shown_url(url: str) -> str:
    """The URL as a user may see it: the password as ***. The one redaction: the CLI and
    the sidebar call this too."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # a URL we cannot parse is shown as given
        return url


def make_engine(url: str | None = None, *, migrate: bool = True,
                read_only: bool | None = None) -> Engine:
    """Create an engine for `url` (default: $LAUNCHBENCH_DB or the local SQLite file),
    check that it answers, and bring its schema to the latest version.

    read_only (default: $LAUNCHBENCH_READ_ONLY): open the database read-only (SQLite
    through a read-only URI, PostgreSQL with READ ONLY transactions) and never create,
    migrate or seed it; a missing file or a missing or other schema revision raises
    ReadOnlySchemaError instead."""
    if read_only is None:
        from db import access

        read_only = access.read_only()
    url = url or default_url()
    shown = shown_url(url)
    backend, kwargs = _engine_options(url, shown, read_only)
    try:
        engine = create_engine(url, **kwargs)
    except (ArgumentError, NoSuchModuleError, ImportError) as e:
        raise DatabaseError(f"cannot use database URL {shown!r}: {e}") from None
    if backend == "sqlite":
        event.listen(engine, "connect",
                     _sqlite_read_only_pragmas if read_only else _sqlite_pragmas)
    elif read_only:
        event.listen(engine, "connect", _pg_read_only)
    _open(engine, shown, read_only, migrate)
    return engine


def _engine_options(url: str, shown: str, read_only: bool) -> tuple[str, dict[str, object]]:
    """(the backend, create_engine's keyword arguments) for a URL checked here: one line
    naming a bad URL, an unsupported backend, or a SQLite file that cannot be."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(
            f"bad database URL {shown!r}: expected e.g. sqlite:///data/launchbench.db "
            "or postgresql+psycopg://host/db") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise DatabaseError(f"unsupported database {backend!r} in URL {shown!r}: "
                            "use sqlite or postgresql")
    if backend != "sqlite":
        return backend, {"pool_pre_ping": True}
    db = parsed.database
    if not db or db == ":memory:":
        raise DatabaseError(f"database URL {shown!r} names no file: launchbench keeps "
                            "results in a SQLite file")
    path = Path(db).expanduser()
    parent = path.resolve().parent
    if not parent.is_dir():
        raise DatabaseError(f"database URL {shown!r}: directory {str(parent)!r} "
                            "does not exist")
    if not read_only:
        return backend, {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}}
    if not path.is_file():
        raise ReadOnlySchemaError(f"database {shown!r} does not exist (no file "
                                  f"{str(path)!r}), and read-only mode never creates one")
    return backend, {"creator": _sqlite_read_only_creator(path)}


def _open(engine: Engine, shown: str, read_only: bool, migrate: bool) -> None:
    """Connect once, then check the schema (read-only) or bring it to head; a failure
    disposes of the engine and names the cause in one line."""
    try:
        with engine.connect():
            pass
        if read_only:
            _check_schema(engine, shown)
        elif migrate:
            from db.migrate import upgrade

            upgrade(engine)
    except ReadOnlySchemaError:
        engine.dispose()
        raise
    except (OperationalError, sqlalchemy.exc.DatabaseError) as e:  # the driver's, not ours
        engine.dispose()
        first = str(e.orig if getattr(e, "orig", None) else e).strip().splitlines()[0]
        raise DatabaseError(f"cannot open database {shown!r}: {first}") from None
