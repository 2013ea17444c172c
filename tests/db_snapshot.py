"""What the importers wrote, to compare before and after: a refused bundle must leave the
database as it found it."""

from __future__ import annotations

from sqlalchemy import text

TABLES = ("environments", "runs", "measurements", "serve_configs", "serve_results",
          "serve_profile", "jobs")


def snapshot(engine) -> dict:
    """The row count of every table the importers write (those the schema has)."""
    out = {}
    with engine.connect() as c:
        names = set(engine.dialect.get_table_names(c))
        for t in TABLES:
            if t in names:
                out[t] = tuple(c.execute(text(f"SELECT count(*) FROM {t}")).one())
    return out
