"""Storage basics on both backends: write a run point by point, export, import again."""

import sqlite3
import uuid

import pytest
from sqlalchemy import text

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.run_record import Environment, Run
from db import store
from db.engine import DatabaseError, make_engine, switch_to_wal


def _run(**kw):
    return Run(uuid=str(uuid.uuid4()), workload="mlp", created_at=fmt.now_iso(),
               workload_params={"depth": 2}, **kw)


def test_point_by_point_then_roundtrip(any_url):
    engine = make_engine(any_url)
    run_id = store.start_run(engine, Environment(device="cpu", torch_version="2.13"), _run())
    m = fmt.empty_measurement("eager", 8)
    m.update(step_ms=1.5, step_ms_p10=1.4, step_ms_p90=1.7, samples=3, samples_ms=[1.4, 1.5, 1.7])
    store.add_measurement(engine, run_id, Measurement.from_json(m))
    store.finish_run(engine, run_id, "done")
    doc = store.export_bundle(engine, run_id)
    assert doc["run"]["status"] == "done"
    assert doc["measurements"][0]["samples_ms"] == [1.4, 1.5, 1.7]
    assert doc["measurements"][0]["gpu_busy_ms"] is None  # unknown stays unknown
    # Re-import into a second database gives the same bundle back.
    other = make_engine(any_url)
    assert store.import_bundle(other, doc) == (run_id, False)  # same uuid: nothing added
    engine.dispose()
    other.dispose()


def test_import_is_all_or_nothing(sqlite_engine):
    doc = fmt.make_bundle({"device": "cpu"}, _run(status="done").to_json(),
                          [fmt.empty_measurement("eager", 1), fmt.empty_measurement("eager", 1)])
    with pytest.raises(fmt.BundleError, match="duplicate point"):
        store.import_bundle(sqlite_engine, doc)
    with sqlite_engine.connect() as c:
        assert c.execute(text("select count(*) from runs")).scalar() == 0
        assert c.execute(text("select count(*) from environments")).scalar() == 0


@pytest.mark.parametrize("url, match", [
    ("nonsense", "bad database URL"),
    ("mysql://x/y", "unsupported database 'mysql'"),
    ("sqlite:////no/such/dir/x.db", "does not exist"),
    ("postgresql+psycopg://nobody@127.0.0.1:1/x", "cannot open database"),
])
def test_bad_database_urls(url, match):
    with pytest.raises(DatabaseError, match=match):
        make_engine(url)


def test_sqlite_pragmas(sqlite_engine):
    with sqlite_engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


@pytest.fixture
def write_locked_fresh_file(tmp_path):
    """A fresh SQLite file whose write lock one connection holds, and a second connection
    (with a 30 s busy timeout) that has to switch it to WAL."""
    path = tmp_path / "fresh.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=30, isolation_level=None)
    yield holder, other
    holder.close()
    other.close()


def test_switch_to_wal_retries_while_another_connection_holds_the_write_lock(
        write_locked_fresh_file):
    """The flake of test_schema_race: the bare pragma fails at once, the busy timeout
    notwithstanding; switch_to_wal waits and switches once the lock is released."""
    holder, other = write_locked_fresh_file
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        other.execute("PRAGMA journal_mode=WAL")
    waits = []

    def release(seconds):
        waits.append(seconds)
        holder.execute("COMMIT")

    switch_to_wal(other.cursor(), sleep=release)
    assert waits == [0.01]
    assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_switch_to_wal_gives_up_after_its_tries(write_locked_fresh_file, monkeypatch):
    _, other = write_locked_fresh_file
    monkeypatch.setattr("db.engine.WAL_TRIES", 3)
    waits = []
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        switch_to_wal(other.cursor(), sleep=waits.append)
    assert waits == [0.01, 0.01]  # three tries, two waits between them
    assert other.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_intervals_and_rounds_round_trip_and_count_per_run(any_url):
    """Version 3 fields (rounds, intervals, noise flags) survive database and bundle; an
    older bundle imports with every one of them unknown, and the runs list counts both."""
    from contract import noise
    from contract.noise import NoiseCounts
    from db import queries
    from tests.synthetic import sweep_bundle

    engine = make_engine(any_url)
    noisy = {"noisy": True, "stop_reason": "budget", "host_unstable": True}
    new = sweep_bundle(batches=(1, 8), modes=("eager", "cuda-graph"),
                       overrides={("cuda-graph", 8): noisy})
    old = sweep_bundle(batches=(1, 8), modes=("eager", "cuda-graph"), intervals=False)
    assert new["version"] == fmt.VERSION >= 3 and old["version"] == 2
    new_id, _ = store.import_bundle(engine, new)
    old_id, _ = store.import_bundle(engine, old)
    back = store.export_bundle(engine, new_id)
    want = {(m["mode"], m["batch_size"]): m for m in new["measurements"]}
    for m in back["measurements"]:
        w = want[(m["mode"], m["batch_size"])]
        for f in ("samples_ms", "launch_us_rounds", "step_ms_ci_low", "step_ms_ci_high",
                  "speedup", "speedup_ci_low", "speedup_ci_high", "launch_us",
                  "stop_reason", "noisy", "host_unstable"):
            assert m[f] == (pytest.approx(w[f]) if isinstance(w[f], float) else w[f]), f
    for m in store.export_bundle(engine, old_id)["measurements"]:
        assert m["speedup"] is None and m["step_ms_ci_low"] is None and m["noisy"] is None
        assert m["launch_us_rounds"] == [] and m["stop_reason"] is None
    runs = {r.header.id: r.noise for r in queries.runs_list(engine)}
    assert runs[new_id] == NoiseCounts(4, 4, 1, 1)
    assert runs[old_id] == NoiseCounts(4, 0, 0, 0)
    # The SQL sum counts what contract/noise.py counts over the points themselves.
    for rid in (new_id, old_id):
        assert noise.counts(queries.run_points(engine, rid)) == runs[rid]
    pts = queries.run_points(engine, new_id)
    assert [m.timing.stop_reason for m in pts].count("budget") == 1
    engine.dispose()


def test_a_bundle_file_is_checked_once_on_its_way_to_the_database(sqlite_url, tmp_path,
                                                                   monkeypatch, capsys):
    from runner.ops.cli import main

    path = tmp_path / "run.json"
    fmt.write(path, fmt.make_bundle({"device": "cpu"}, _run(status="done").to_json(),
                                    [fmt.empty_measurement("eager", 1)]))
    checks = []
    check = fmt.validate
    monkeypatch.setattr(fmt, "validate",
                        lambda doc, *a: checks.append(1) or check(doc, *a))
    assert main(["import", str(path), "--db", sqlite_url]) == 0
    assert "imported run" in capsys.readouterr().out
    assert len(checks) == 1  # where the file was read, not again in db.store


def test_a_checked_bundle_changed_in_code_is_checked_again_once_it_is_plain(sqlite_engine):
    doc = fmt.validate(fmt.make_bundle({"device": "cpu"}, _run(status="done").to_json(), []))
    assert isinstance(doc, fmt.Bundle)
    plain = {**doc, "run": {**doc["run"], "status": "bogus"}}  # a dict again, unchecked
    with pytest.raises(fmt.BundleError, match="run.status 'bogus'"):
        store.import_bundle(sqlite_engine, plain)
