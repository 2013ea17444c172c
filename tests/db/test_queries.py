"""The dashboard's reads against a real database: the shipped samples, the run list with
its counts and filters, headers and points as records (db/records.py), and the data
version the caches key on, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from contract import bundle as fmt
from contract import speedups as sp
from db import queries
from db.samples import SAMPLES, seed_if_empty
from db.store import import_bundle
from tests.synthetic import sweep_bundle

PUBLISHED = SAMPLES / "published-l40s-day25.json"


def test_published_sample_holds_exactly_the_articles_figures():
    doc = fmt.read(PUBLISHED)
    assert doc["run"]["source"] == "published"
    assert "torch.compile, day 25: CUDA Graph" in doc["run"]["label"]
    env = doc["environment"]
    assert (env["device"], env["gpu_name"], env["torch_version"]) == ("cuda", "NVIDIA L40S",
                                                                      "2.8.0")
    assert all(env[f] is None for f in fmt.ENVIRONMENT_FIELDS
               if f not in ("device", "gpu_name", "torch_version"))
    got = {(m["mode"], m["batch_size"]): (m["step_ms"], m["details"].get("stddev_ms"))
           for m in doc["measurements"] if m["status"] == "ok"}
    assert got == {("eager", 8): (1.124, 0.008), ("compile", 8): (0.960, 0.019),
                   ("reduce-overhead", 8): (0.119, 0.003), ("cuda-graph", 8): (0.113, None),
                   ("eager", 8192): (2.228, 0.002), ("compile", 8192): (1.585, 0.003),
                   ("reduce-overhead", 8192): (1.567, 0.004)}
    for m in doc["measurements"]:
        assert m["details"]["citation"] == doc["run"]["label"]
        # Nothing the article does not give is filled in.
        assert all(m[f] is None for f in fmt.NUMBER_FIELDS if f != "step_ms")


def test_seed_imports_samples_once_and_reports_bad_files(sqlite_engine, tmp_path):
    (tmp_path / "a.json").write_text(PUBLISHED.read_text())
    (tmp_path / "b.json").write_text('{"format": "launchbench.run", "version": 1')
    first = seed_if_empty(sqlite_engine, tmp_path)
    assert len(first.imported) == 1 and len(first.errors) == 1
    assert first.errors[0].startswith("b.json:") and "not valid JSON" in first.errors[0]
    again = seed_if_empty(sqlite_engine, tmp_path)
    assert again.skipped and again.imported == []
    assert len(queries.runs_frame(sqlite_engine)) == 1


def test_seed_writes_nothing_in_read_only_mode(sqlite_engine, monkeypatch):
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    assert seed_if_empty(sqlite_engine).skipped
    assert queries.runs_frame(sqlite_engine).empty


def test_seed_leaves_a_database_with_runs_alone(sqlite_engine):
    import_bundle(sqlite_engine, sweep_bundle())
    assert seed_if_empty(sqlite_engine).skipped
    assert len(queries.runs_frame(sqlite_engine)) == 1


def test_runs_frame_filters_and_counts(sqlite_engine):
    a, _ = import_bundle(sqlite_engine, sweep_bundle(gpu="A", torch="2.1",
                                                     failing={("compile", 8): "oom"}))
    b, _ = import_bundle(sqlite_engine, sweep_bundle(gpu="B", torch="2.2", workload="w2",
                                                     created_at="2026-02-01T00:00:00Z"))
    c, _ = import_bundle(sqlite_engine, sweep_bundle(device="cpu", torch="2.2"))
    df = queries.runs_frame(sqlite_engine)
    assert list(df["id"]) == [b, a, c] or set(df["id"]) == {a, b, c}
    assert df.iloc[0]["id"] == b  # newest first
    row = df.set_index("id").loc[a]
    assert (row["points"], row["ok_points"]) == (20, 19)
    assert set(queries.runs_frame(sqlite_engine, gpus=["cpu"])["id"]) == {c}
    assert set(queries.runs_frame(sqlite_engine, gpus=["A", "cpu"])["id"]) == {a, c}
    assert set(queries.runs_frame(sqlite_engine, torches=["2.2"], workloads=["mlp"])["id"]) == {c}
    opts = queries.run_filter_options(sqlite_engine)
    assert opts == {"gpu": ["A", "B", "cpu"], "workload": ["mlp", "w2"], "torch": ["2.1", "2.2"]}


def test_headers_points_and_version(sqlite_engine):
    v0 = queries.data_version(sqlite_engine)
    a, _ = import_bundle(sqlite_engine, sweep_bundle(batches=(8,)))
    b, _ = import_bundle(sqlite_engine, sweep_bundle(device="cpu", batches=(8, 64)))
    assert queries.data_version(sqlite_engine) != v0
    assert [h.id for h in queries.run_headers(sqlite_engine, [b, a, 999])] == [b, a]
    assert queries.run_header(sqlite_engine, 999) is None
    assert queries.run_header(sqlite_engine, b).gpu_name is None
    assert queries.run_header(sqlite_engine, b).created_at.tzinfo is not None  # UTC
    p = queries.run_points(sqlite_engine, b)
    assert len(p) == 8
    unsupported = [m for m in p if m.status == "unsupported"]
    assert {m.mode for m in unsupported} == {"reduce-overhead", "cuda-graph"}
    assert all(m.timing.step_ms is None for m in unsupported)  # unknown, not 0
    assert queries.points(sqlite_engine, []) == {}
    # The one converter gives the record an import of the same bundle would.
    doc = sweep_bundle(device="cpu", batches=(8, 64))
    assert json.loads(json.dumps(p[0].details())) == p[0].details()
    assert {(m.mode, m.batch_size): m.to_json()["step_ms"] for m in p} == {
        (m["mode"], m["batch_size"]): m["step_ms"] for m in fmt.validate(doc)["measurements"]}


def test_dashboard_queries_on_sqlite_and_postgresql(any_url):
    from db.engine import make_engine

    engine = make_engine(any_url)
    try:
        seed_if_empty(engine)
        gpu, _ = import_bundle(engine, sweep_bundle(gpu="A", failing={("eager", 8): "x"}))
        cpu, _ = import_bundle(engine, sweep_bundle(device="cpu"))
        # The samples hold CPU runs too (the torch series): "cpu" filters them in alike.
        shipped_cpu = set(queries.runs_frame(engine, gpus=["cpu"])["id"]) - {cpu}
        assert shipped_cpu and gpu not in shipped_cpu
        df = queries.runs_frame(engine, gpus=["A", "cpu"])
        assert set(df["id"]) == {gpu, cpu} | shipped_cpu
        assert df.set_index("id").at[gpu, "ok_points"] == 19
        assert "NVIDIA L40S" in queries.run_filter_options(engine)["gpu"]
        p = queries.points(engine, [gpu, cpu])
        assert sum(map(len, p.values())) == 40
        h = queries.run_headers(engine, [cpu, gpu])
        assert [x.id for x in h] == [cpu, gpu] and h[0].gpu_name is None
        assert all(s.speedup > 1 for s in sp.speedups(p[gpu]) if s.mode == "compile")
        listed = {r.header.id: r for r in queries.runs_list(engine, gpus=["A", "cpu"])}
        assert listed[gpu].ok_points == 19 and listed[gpu].noise.ok_points == 19
    finally:
        engine.dispose()

