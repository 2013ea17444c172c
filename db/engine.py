"""The engine factory: one place that turns a database URL into a ready, migrated engine."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.exc import DatabaseError as SADatabaseError

DEFAULT_URL = "sqlite:///data/launchbench.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000


class DatabaseError(RuntimeError):
    """A database URL that cannot be used. str() is one line naming the URL."""


def default_url() -> str:
    return os.environ.get("LAUNCHBENCH_DB") or DEFAULT_URL


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets the dashboard read while a sweep writes; foreign keys are off by default in
    # SQLite; the busy timeout makes concurrent writers (workers) wait instead of failing.
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.close()


def shown_url(url: str) -> str:
    """The URL as a user may see it: the password as ***. The one redaction: the CLI and
    the sidebar call this too."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # a URL we cannot parse is shown as given
        return url


def make_engine(url: str | None = None, *, migrate: bool = True) -> Engine:
    """Create an engine for `url` (default: $LAUNCHBENCH_DB or the local SQLite file),
    check that it answers, and bring its schema to the latest version."""
    url = url or default_url()
    shown = shown_url(url)
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
    kwargs: dict = {}
    if backend == "sqlite":
        db = parsed.database
        if not db or db == ":memory:":
            raise DatabaseError(f"database URL {shown!r} names no file: launchbench keeps "
                                "results in a SQLite file")
        parent = Path(db).expanduser().resolve().parent
        if not parent.is_dir():
            raise DatabaseError(f"database URL {shown!r}: directory {str(parent)!r} "
                                "does not exist")
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except (ArgumentError, NoSuchModuleError, ImportError) as e:
        raise DatabaseError(f"cannot use database URL {shown!r}: {e}") from None
    if backend == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        with engine.connect():
            pass
        if migrate:
            from db.migrate import upgrade

            upgrade(engine)
    except (OperationalError, SADatabaseError) as e:
        engine.dispose()
        first = str(e.orig if getattr(e, "orig", None) else e).strip().splitlines()[0]
        raise DatabaseError(f"cannot open database {shown!r}: {first}") from None
    return engine
