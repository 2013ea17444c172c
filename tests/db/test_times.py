"""Times keep their instant (issue 48, item 5): stored in UTC on SQLite and PostgreSQL
alike, read back as aware UTC, so a bundle with an offset exports the same moment and
importing any shipped or exported bundle again adds nothing."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from contract import bundle as fmt
from db import store
from db.engine import make_engine
from db.models import RunRow
from tests.conftest import ROOT

SAMPLES = sorted((ROOT / "data" / "samples").glob("*.json"))
OFFSET = "2026-12-05T17:07:09+05:00"  # the case in the issue: 12:07:09 UTC


def _with_offset() -> fmt.Bundle:
    doc = json.loads((ROOT / "data" / "samples" / "h200-mlp-energy.json").read_text())
    doc["run"].update(created_at=OFFSET, finished_at="2026-12-05T17:09:01+05:00")
    return fmt.validate(doc)


def test_a_time_with_an_offset_keeps_its_instant(any_url):
    engine = make_engine(any_url)
    try:
        doc = _with_offset()
        run_id, created = store.import_bundle(engine, doc)
        assert created
        out = store.export_bundle(engine, run_id)
        assert out["run"]["created_at"] == "2026-12-05T12:07:09+00:00"
        assert out["run"]["finished_at"] == "2026-12-05T12:09:01+00:00"
        with engine.connect() as c:
            stored = c.scalar(select(RunRow.created_at).where(RunRow.id == run_id))
        assert stored.utcoffset() == timedelta(0)  # read back aware, in UTC
        assert stored == datetime(2026, 12, 5, 12, 7, 9, tzinfo=timezone.utc)
        # The same file again, and the exported one: nothing added, no conflict.
        assert store.import_bundle(engine, doc) == (run_id, False)
        assert store.import_bundle(engine, fmt.validate(out)) == (run_id, False)
    finally:
        engine.dispose()


def test_every_shipped_and_exported_bundle_imports_again_as_a_no_op(any_url):
    engine = make_engine(any_url)
    try:
        for path in SAMPLES:
            doc = fmt.read(path)
            run_id, created = store.import_bundle(engine, doc)
            assert created, path.name
            assert store.import_bundle(engine, fmt.read(path)) == (run_id, False), path.name
            exported = fmt.loads(fmt.dumps(store.export_bundle(engine, run_id)))
            assert store.import_bundle(engine, exported) == (run_id, False), path.name
            assert exported["run"]["created_at"].endswith("+00:00")
            assert (fmt.parse_time(exported["run"]["created_at"])
                    == fmt.parse_time(doc["run"]["created_at"]))
    finally:
        engine.dispose()


def test_a_naive_time_reads_as_utc(sqlite_url):
    engine = make_engine(sqlite_url)
    try:
        doc = json.loads(fmt.dumps(_with_offset()))
        doc["run"].update(uuid="naive-time", created_at="2026-12-05T17:07:09",
                          finished_at=None)
        run_id, _ = store.import_bundle(engine, fmt.validate(doc))
        assert store.export_bundle(engine, run_id)["run"]["created_at"] == \
            "2026-12-05T17:07:09+00:00"
    finally:
        engine.dispose()


@pytest.mark.parametrize("stored, shown", [
    (datetime(2026, 12, 5, 17, 7, 9, tzinfo=timezone(timedelta(hours=5))),
     "2026-12-05T12:07:09+00:00"),
    (datetime(2026, 12, 5, 12, 7, 9), "2026-12-05T12:07:09+00:00"),
])
def test_the_column_type_converts_both_ways(stored, shown):
    from sqlalchemy.dialects import postgresql, sqlite

    from db.models import UtcDateTime

    t = UtcDateTime()
    lite = t.process_bind_param(stored, sqlite.dialect())
    assert lite.tzinfo is None and lite.isoformat() + "+00:00" == shown
    assert t.process_result_value(lite, sqlite.dialect()).isoformat() == shown
    pg = t.process_bind_param(stored, postgresql.dialect())
    assert pg.isoformat() == shown
    other_zone = pg.astimezone(timezone(timedelta(hours=-7)))  # a server in another zone
    assert t.process_result_value(other_zone, postgresql.dialect()).isoformat() == shown
