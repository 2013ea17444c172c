"""A SQLite file at an older schema revision holding one run with one point: what a
migration must carry forward (tests/runner/serve/test_serve_runs.py,
tests/db/test_graph_memory_store.py)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from db import migrate
from db.engine import make_engine


def old_database(folder: Path, revision: str):
    """An engine on folder/old.db, migrated only up to `revision`, with run 1 and its one
    eager point at batch 8."""
    engine = make_engine(f"sqlite:///{folder / 'old.db'}", migrate=False)
    migrate.upgrade(engine, revision)
    with engine.begin() as c:
        c.execute(text("insert into environments(id, key, device) values (1, 'k', 'cpu')"))
        c.execute(text("insert into runs(id, uuid, environment_id, workload, workload_params,"
                       " created_at, status, source) values (1, 'u', 1, 'mlp', '{}', "
                       "'2025-01-01', 'done', 'measured')"))
        c.execute(text("insert into measurements(run_id, mode, batch_size, status, message, "
                       "cudagraph_status, samples_ms, details) values (1, 'eager', 8, 'ok', "
                       "'', 'n/a', '[]', '{}')"))
    return engine
