"""Schema versions through Alembic: `upgrade(engine)` brings any database to head."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from db import vocab_checks

MIGRATIONS = Path(__file__).with_name("migrations")


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def head() -> str:
    found = ScriptDirectory.from_config(_config()).get_current_head()
    assert found is not None  # the migrations have one head
    return found


def current(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


# Any constant: the PostgreSQL advisory lock every launchbench process takes to create or
# migrate the schema ("lbsc" in ASCII), so no other application's lock is likely to clash.
SCHEMA_LOCK_KEY = 0x6C627363


def _lock_schema(conn: Connection) -> None:
    """Hold the schema lock until this transaction ends. Without it, processes opening a
    fresh database at once (four `runner enqueue` on first use) all see no schema and all
    create it: SQLite answers "table environments already exists", PostgreSQL a duplicate
    key in pg_type, and their jobs are lost. With it, one creates and the others wait,
    then find the schema at head."""
    if conn.dialect.name == "postgresql":
        # Transaction-scoped: released by the commit, or by the server if we die.
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
    else:
        # pysqlite opens no transaction before DDL by itself; an IMMEDIATE one takes the
        # database's write lock now, and the others wait on the busy timeout.
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision`; at head, the vocabulary CHECKs to the contract's
    tables too (db/vocab_checks.py: a new mode or run kind needs no migration)."""
    if revision == "head" and current(engine) == head():
        # The common case: skip Alembic's machinery on every engine creation.
        with engine.connect() as conn:
            if not vocab_checks.missing(conn):
                return
    with engine.begin() as conn:
        _lock_schema(conn)
        # Whoever held the lock before us may have done the work already.
        if revision != "head" or \
                MigrationContext.configure(conn).get_current_revision() != head():
            cfg = _config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
        if revision == "head":
            vocab_checks.widen(conn)
