"""Graph-memory runs stored as runs of their own kind (issue 27): the bundle's
graph_memory section, import / export round trips on SQLite and PostgreSQL, refusals in
one line, and migration 0010 on a database that already holds runs."""

from __future__ import annotations

import copy

import pytest
from sqlalchemy import func, select, text

from contract import bundle as fmt
from contract import graph_memory as gm
from db import graph_memory as dbgm
from db import migrate, store
from db.models import GraphMemoryCaptureRow, MeasurementRow, RunRow
from tests.conftest import ROOT
from tests.graph_memory_data import probe_bundle
from tests.old_database import old_database

MIB = 1 << 20


def test_round_trip_on_both_backends(engine):
    doc = probe_bundle()
    run_id, created = store.import_bundle(engine, doc)
    assert created and store.import_bundle(engine, doc) == (run_id, False)
    back = fmt.validate(store.export_bundle(engine, run_id))
    assert back["run"]["kind"] == "graph-memory" and back["measurements"] == []
    assert store.fingerprint(back) == store.fingerprint(fmt.validate(doc))
    a = back[gm.SECTION]["attribution"]
    assert a["shared_total_bytes"] == 34 * MIB and a["shared_saves_bytes"] == 306 * MIB
    curve = gm.curve(dbgm.graph_memory_doc(engine, run_id), f"run {run_id}")
    assert curve.fixed_bytes == pytest.approx(34 * MIB, rel=0.01)
    assert "NVIDIA H200" in curve.source
    runs = dbgm.graph_memory_runs(engine)
    assert list(runs["id"]) == [run_id]
    assert dbgm.attributions(engine, [run_id])[run_id] == {**a, "sizes": 10}
    store.delete_run(engine, run_id)
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(GraphMemoryCaptureRow)) == 0


def test_a_changed_series_under_the_same_uuid_conflicts(engine):
    doc = probe_bundle()
    store.import_bundle(engine, doc)
    other = copy.deepcopy(doc)
    other[gm.SECTION]["series"]["shared"][0]["capture_s"] = 9.0
    with pytest.raises(store.BundleConflict, match="different content"):
        store.import_bundle(engine, other)


def test_another_kind_is_named(sqlite_engine):
    sweep = fmt.make_bundle({"device": "cpu"}, {"uuid": "s", "workload": "mlp",
                                                "created_at": fmt.now_iso(),
                                                "status": "done"},
                            [fmt.empty_measurement("eager", 8)])
    run_id, _ = store.import_bundle(sqlite_engine, sweep)
    with pytest.raises(dbgm.NotGraphMemory, match=f"run {run_id} is a sweep run"):
        dbgm.graph_memory_doc(sqlite_engine, run_id)
    with pytest.raises(store.RunNotFound):
        dbgm.graph_memory_doc(sqlite_engine, 999)


def _edit(path, value):
    def apply(doc):
        *head, last = path
        node = doc
        for k in head:
            node = node[k]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return apply


@pytest.mark.parametrize("edit,match", [
    (_edit(["graph_memory"], KeyError), "no 'graph_memory' section"),
    (_edit(["run", "kind"], "sweep"), "'graph_memory' section but run.kind is 'sweep'"),
    (_edit(["graph_memory", "series", "shared", 0, "pool_reserved_bytes"], -1),
     r"series\.shared\[0\]: pool_reserved_bytes -1 is out of range"),
    (_edit(["graph_memory", "series", "shared", 1, "batch_size"], 3),
     "every size, largest first"),
    (_edit(["graph_memory", "series", "pinned"], []), "must be some of shared, private"),
    (_edit(["graph_memory", "sizes"], [4, 4]), "distinct batch sizes"),
    (_edit(["measurements"], [fmt.empty_measurement("eager", 8)]), "has no measurements"),
])
def test_bad_sections_are_refused_in_one_line(edit, match):
    doc = probe_bundle()
    edit(doc)
    with pytest.raises(fmt.BundleError, match=match) as e:
        fmt.validate(doc)
    assert "\n" not in str(e.value)


def test_an_edited_attribution_is_recomputed_from_the_rows():
    doc = probe_bundle()
    doc[gm.SECTION]["attribution"]["fixed_bytes_per_capture"] = 1
    assert fmt.validate(doc)[gm.SECTION]["attribution"]["fixed_bytes_per_capture"] > MIB


def test_file_forms_read_alike(tmp_path):
    """advise-capture --curve and the Serve page take the bundle (graph-memory --out,
    export) and the older launchbench.graph-memory document alike."""
    doc = probe_bundle()
    a = fmt.graph_memory_doc(doc, "b.json")
    sec = doc[gm.SECTION]
    older = gm.make_doc(doc["environment"], doc["run"], sec["sizes"],
                        gm.section_rows(sec)[1])
    b = fmt.graph_memory_doc(older, "d.json")
    assert gm.curve(a, "x") == gm.curve(b, "x")
    sweep = fmt.make_bundle({"device": "cpu"}, {"uuid": "u", "workload": "mlp",
                                                "created_at": fmt.now_iso(),
                                                "status": "done"}, [])
    with pytest.raises(gm.GraphMemoryError, match="s.json is a sweep run"):
        fmt.graph_memory_doc(sweep, "s.json")


def test_migration_0010_keeps_runs_and_widens_the_kind(tmp_path):
    engine = old_database(tmp_path, "0008_hosts")
    migrate.upgrade(engine)
    assert migrate.current(engine) == migrate.head()
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(MeasurementRow)) == 1
        assert c.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    run_id, _ = store.import_bundle(engine, probe_bundle())
    with pytest.raises(Exception, match="ck_run_kind|CHECK"), engine.begin() as c:
        c.execute(text("update runs set kind = 'nonsense' where id = 1"))
    # Down again: the graph-memory run goes with its table; the sweep stays.
    from alembic import command

    with engine.begin() as conn:
        cfg = migrate._config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0009_energy")
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(RunRow)) == 1
        assert c.scalar(select(func.count()).select_from(MeasurementRow)) == 1
        sql = c.exec_driver_sql("select sql from sqlite_master where name = 'runs'").scalar()
    assert "'graph-memory'" not in sql and "'serve'" in sql
    migrate.upgrade(engine)
    assert store.import_bundle(engine, probe_bundle())[1]
    engine.dispose()


def test_db_store_still_starts_without_pandas():
    """db/store.py imports db/graph_memory.py: `import`, `sweep` and the worker started
    without pandas before it, and must go on doing so."""
    import subprocess
    import sys

    code = "import sys, db.store; assert 'pandas' not in sys.modules, 'pandas imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
