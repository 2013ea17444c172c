"""The database's vocabulary CHECKs kept to the contract's tables (issue 45, item 4): a
mode or a run kind is one entry of contract/vocab.py, and a database created before the
entry existed accepts it without a migration of its own.

The CHECK lists are read from the database, and only ever widened: a name the table lost
stays allowed, so a row written by an older launchbench is never made invalid. SQLite
cannot alter a CHECK, and the table copy Alembic's batch mode makes would DROP the table,
which with foreign keys on cascade-deletes its children; SQLite's documented procedure
for loosening a constraint in place is used instead (lang_altertable, "simpler
procedure": edit the stored CREATE TABLE and bump schema_version), as migration 0010 did
for the first new kind. PostgreSQL drops and adds the constraint in one transaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from contract.vocab import MODES, RUN_KINDS

# (table, column, constraint, the names the contract allows)
CHECKS: tuple[tuple[str, str, str, Sequence[str]], ...] = (
    ("measurements", "mode", "ck_measurement_mode", MODES),
    ("runs", "kind", "ck_run_kind", RUN_KINDS),
)


def _names(listed: str) -> list[str]:
    return re.findall(r"'([^']*)'", listed)


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _pattern(name: str, column: str) -> re.Pattern[str]:
    return re.compile(rf"(CONSTRAINT {name} CHECK \(\(?{column} IN \()([^)]*)(\))")


def missing(conn: Connection) -> dict[str, list[str]]:
    """Per constraint, the contract's names its list lacks (empty: in step)."""
    out = {}
    for table, column, name, wanted in CHECKS:
        have = _names(_listed(conn, table, column, name))
        lack = [n for n in wanted if n not in have]
        if lack:
            out[name] = lack
    return out


def _listed(conn: Connection, table: str, column: str, name: str) -> str:
    if conn.dialect.name == "postgresql":
        return str(conn.execute(text(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = :n"),
            {"n": name}).scalar_one())
    sql = str(conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).scalar_one())
    m = _pattern(name, column).search(sql)
    if m is None:
        raise RuntimeError(f"{table}.{column} has no {name} CHECK to widen: {sql[:200]}")
    return m.group(2)


def widen(conn: Connection) -> list[str]:
    """Add the contract's missing names to each CHECK (in the caller's transaction);
    the constraints changed."""
    lacking = missing(conn)
    for table, column, name, _ in CHECKS:
        if name not in lacking:
            continue
        names = [*_names(_listed(conn, table, column, name)), *lacking[name]]
        if conn.dialect.name == "postgresql":
            conn.execute(text(f"ALTER TABLE {table} DROP CONSTRAINT {name}"))
            conn.execute(text(f"ALTER TABLE {table} ADD CONSTRAINT {name} "
                              f"CHECK ({column} IN ({_quoted(names)}))"))
            continue
        sql = str(conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).scalar_one())
        m = _pattern(name, column).search(sql)
        assert m is not None  # _listed found it
        new = sql[:m.start(2)] + _quoted(names) + sql[m.end(2):]
        version = conn.exec_driver_sql("PRAGMA schema_version").scalar_one()
        conn.exec_driver_sql("PRAGMA writable_schema = ON")
        conn.exec_driver_sql("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND "
                             "name = ?", (new, table))
        conn.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
        conn.exec_driver_sql("PRAGMA writable_schema = OFF")
    return sorted(lacking)


__all__ = ["CHECKS", "missing", "widen"]
