"""Serve runs end to end on the CPU: the CLI, SQLite, bundles (v2, and v1 still read)."""

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select

from contract import bundle as fmt
from db import serve as dbserve
from db import store
from db.engine import make_engine
from db.models import MeasurementRow, RunRow, ServeResultRow
from runner.ops.cli import main
from tests.old_database import old_database

TINY = ["--workload", "mlp", "--param", "depth=2", "--param", "width=16", "--device", "cpu",
        "--quick"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One real tiny serve run through the CLI into SQLite and a bundle, shared."""
    d = tmp_path_factory.mktemp("serve")
    url, out = f"sqlite:///{d / 'lb.db'}", d / "run.json"
    code = main(["serve", *TINY, "--requests", "30", "--batch-dist", "uniform:1-20",
                 "--strategies", "eager,compile,reduce-overhead,buckets:4/8/16",
                 "--seed", "3", "--db", url, "--out", str(out), "--label", "tiny"])
    assert code == 0
    return url, out


def test_cli_run_is_stored_in_sqlite_and_the_bundle(served):
    url, out = served
    doc = fmt.read(out)
    assert doc["version"] == fmt.VERSION and doc["run"]["kind"] == "serve"
    assert doc["measurements"] == []
    sec = doc["serve"]
    assert sec["requests"] == 30 and len(sec["stream"]) == 30 and sec["seed"] == 3
    assert max(sec["stream"]) <= 20
    res = {r["strategy"]: r for r in sec["results"]}
    assert list(res) == ["eager", "compile", "reduce-overhead", "buckets:4/8/16"]
    for name in ("eager", "compile", "buckets:4/8/16"):
        r = res[name]
        assert r["status"] == "ok" and r["correct"] is True, r
        assert len(r["latencies_ms"]) == 30 and r["requests_per_s"] > 0
        assert r["latency_ms_p50"] <= r["latency_ms_p99"]
        assert r["rows_per_s"] == pytest.approx(r["requests_per_s"] * sum(sec["stream"]) / 30)
    assert res["reduce-overhead"]["status"] == "unsupported"
    assert "CUDA" in res["reduce-overhead"]["message"]
    b = res["buckets:4/8/16"]
    assert b["execution"] == "eager-padded" and b["graphs"] == 0
    assert b["graph_pool_bytes"] is None  # no CUDA: unknown, not 0
    assert "no CUDA" in b["details"]["note"]
    falls = sum(1 for x in sec["stream"] if x > 16)
    assert b["fallback_rate"] == pytest.approx(falls / 30)
    assert b["hit_rate"] == pytest.approx(1 - falls / 30)
    padded = sum(x if x > 16 else next(k for k in (4, 8, 16) if k >= x) for x in sec["stream"])
    assert b["padding_waste"] == pytest.approx(padded / sum(sec["stream"]) - 1)
    assert res["compile"]["details"]["compiles_in_replay"] == 0  # warmed: no compile timed
    sizes = [p["batch_size"] for p in sec["profile"]]
    assert {4, 8, 16, 32} <= set(sizes) and all(p["eager_ms"] > 0 for p in sec["profile"])
    # The database holds the same run, and exports the same serve section back.
    engine = make_engine(url)
    runs = dbserve.serve_runs(engine)
    assert len(runs) == 1 and runs.iloc[0]["label"] == "tiny"
    run_id = int(runs.iloc[0]["id"])
    back = store.export_bundle(engine, run_id)
    assert back["serve"] == doc["serve"] and back["run"]["uuid"] == doc["run"]["uuid"]
    assert back["run"]["command"].startswith("python -m runner serve --workload mlp")
    table = dbserve.serve_results(engine, run_id)
    assert list(table["strategy"]) == list(res)
    reqs = dbserve.serve_requests(engine, run_id)
    assert len(reqs) == 3 * 30 and set(reqs["strategy"]) == {"eager", "compile",
                                                            "buckets:4/8/16"}
    assert len(dbserve.serve_profile(engine, run_id)) == len(sizes)
    engine.dispose()


def test_serve_bundle_imports_once_on_both_backends(served, any_url):
    doc = fmt.read(served[1])
    engine = make_engine(any_url)
    run_id, created = store.import_bundle(engine, doc)
    assert created and store.import_bundle(engine, doc) == (run_id, False)
    assert store.export_bundle(engine, run_id)["serve"] == doc["serve"]
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(ServeResultRow)) == 4
        assert c.scalar(select(RunRow.kind)) == "serve"
    engine.dispose()


def _v1_bundle() -> dict:
    m = fmt.empty_measurement("eager", 8)
    m.update(step_ms=1.25, samples=2, samples_ms=[1.2, 1.3])
    return {"format": fmt.FORMAT, "version": 1,
            "environment": {"device": "cpu", "torch_version": "2.4.0"},
            "run": {"uuid": str(uuid.uuid4()), "workload": "mlp", "created_at": fmt.now_iso(),
                    "status": "done", "workload_params": {}, "label": None, "source": "measured",
                    "command": "python -m runner sweep", "dtype": "float32",
                    "finished_at": None},
            "measurements": [{k: v for k, v in m.items()}]}


def test_version_1_bundles_still_import_and_re_export(tmp_path, sqlite_engine):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_v1_bundle()))  # written by an older launchbench
    doc = fmt.read(path)
    assert doc["version"] == 1 and doc["run"]["kind"] == "sweep" and "serve" not in doc
    run_id, created = store.import_bundle(sqlite_engine, doc)
    assert created
    out = store.export_bundle(sqlite_engine, run_id)
    assert out["version"] == fmt.VERSION and out["run"]["kind"] == "sweep" and "serve" not in out
    assert out["measurements"][0]["samples_ms"] == [1.2, 1.3]
    written = fmt.write(tmp_path / "again.json", out)
    assert store.import_bundle(sqlite_engine, fmt.read(written)) == (run_id, False)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d["run"].update(kind="bench"), "run.kind 'bench'"),
    (lambda d: d.pop("serve"), "no 'serve' section"),
    (lambda d: d["run"].update(kind="sweep"), "has a 'serve' section but run.kind"),
    (lambda d: d.update(version=1), "version 1 bundle holds a sweep only"),
    (lambda d: d["serve"].update(stream=[1, 2]), "serve.stream must list 30"),
    (lambda d: d["serve"]["stream"].__setitem__(0, 0), "serve.stream must list 30"),
    (lambda d: d["serve"].update(strategies=["warp"]), "unknown strategy 'warp'"),
    (lambda d: d["serve"]["results"][0].update(requests_per_s=-1.0), "requests_per_s -1.0"),
    (lambda d: d["serve"]["results"][0].update(latencies_ms=[1.0]), "latencies_ms has 1"),
    (lambda d: d["serve"]["results"][0].update(status="great"), "status 'great'"),
    (lambda d: d["serve"]["results"][1].update(strategy="eager"), "kind/buckets do not match"),
    (lambda d: d["serve"]["results"][3].update(buckets=[4, 8]), "kind/buckets do not match"),
    (lambda d: d["serve"]["results"][0].update(graphs=1.5), "graphs 1.5 must be a whole"),
    (lambda d: d["serve"]["profile"][0].update(batch_size=0), "batch_size 0"),
    (lambda d: d["serve"].update(batch_dist="x" * 1001), "longer than 1000 characters"),
])
def test_bad_serve_sections_refused_one_line(served, mutate, match):
    doc = json.loads(Path(served[1]).read_text())
    mutate(doc)
    with pytest.raises(fmt.BundleError) as e:
        fmt.validate(doc)
    assert match in str(e.value) and "\n" not in str(e.value)


def test_migration_keeps_existing_runs_and_their_measurements(tmp_path):
    from db import migrate

    engine = old_database(tmp_path, "0002_jobs")
    migrate.upgrade(engine)
    assert migrate.current(engine) == migrate.head()
    with engine.connect() as c:
        assert c.scalar(select(RunRow.kind)) == "sweep"
        assert c.scalar(select(func.count()).select_from(MeasurementRow)) == 1
    engine.dispose()


def test_a_failing_strategy_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    from runner.serve import scenario as serve

    def broken(ctx, s):
        raise RuntimeError("capture exploded\nsecond line")

    monkeypatch.setitem(serve.STRATEGIES, "buckets", broken)
    out = tmp_path / "r.json"
    assert main(["serve", *TINY, "--requests", "10", "--strategies", "buckets:4/8,eager",
                 "--no-db", "--out", str(out)]) == 0
    res = fmt.read(out)["serve"]["results"]
    assert res[0]["status"] == "error" and res[0]["message"] == "RuntimeError: capture exploded"
    assert res[1]["status"] == "ok"


def test_ctrl_c_keeps_the_finished_strategies(tmp_path, monkeypatch):
    from runner.serve import scenario as serve

    real = serve.measure

    def measure(ctx, s, *counter):
        if s.name == "buckets:4":
            raise KeyboardInterrupt
        return real(ctx, s, *counter)

    monkeypatch.setattr(serve, "measure", measure)
    out = tmp_path / "r.json"
    assert main(["serve", *TINY, "--requests", "6", "--strategies", "eager,buckets:4,compile",
                 "--no-db", "--out", str(out)]) == 130
    doc = fmt.read(out)
    assert doc["run"]["status"] == "cancelled"
    assert [r["strategy"] for r in doc["serve"]["results"]] == ["eager"]
    assert doc["serve"]["profile"]  # profiled first, kept


def test_sliced_outputs_are_checked_against_eager():
    import torch

    from runner.core.workloads import resolve
    from runner.serve import scenario as serve

    w = resolve("mlp", {"depth": "2", "width": "8"})
    ctx = serve.make_context(w, "cpu", [3, 5, 5], 0, True)
    assert serve._check(ctx, ctx.model) == (0.0, True)
    pad = torch.zeros(8, 8)  # a bucket that forgets to slice the real rows back out
    err, ok = serve._check(ctx, lambda x: ctx.model(pad))
    assert not ok and err == float("inf")
    err, ok = serve._check(ctx, lambda x: ctx.model(x) + 1e-2)
    assert not ok and err == pytest.approx(1e-2, rel=1e-3)


BAD = [
    (["--strategies", "buckets:16/8"], "ascending order"),
    (["--strategies", "buckets:"], "empty bucket list"),
    (["--strategies", "buckets:0/8"], "0 is out of range"),
    (["--strategies", "eager,warp"], "unknown strategy 'warp'"),
    (["--batch-dist", "gauss:1-4"], "unknown distribution 'gauss:1-4'"),
    (["--batch-dist", "uniform:8-2"], "8 is above 2"),
    (["--batch-dist", "/no/such/file.txt"], "does not exist"),
    (["--requests", "0"], "--requests: 0 is out of range"),
    (["--requests", "many"], "--requests: 'many' is not a whole number"),
    (["--seed", "-1"], "--seed: '-1' is not a whole number"),
    (["--param", "dtype=int8"], "parameter 'dtype'"),
    (["--label", ""], "--label is empty"),
    (["--out", "/no/such/dir/x.json"], "does not exist"),
    (["--db", "mysql://x/y"], "unsupported database 'mysql'"),
]


@pytest.mark.parametrize("extra, match", BAD)
def test_bad_cli_input_exit_2_one_line_nothing_written(tmp_path, monkeypatch, capsys,
                                                       extra, match):
    monkeypatch.chdir(tmp_path)
    argv = ["serve", *TINY, "--requests", "5", "--strategies", "eager",
            "--db", f"sqlite:///{tmp_path / 'lb.db'}", "--out", str(tmp_path / "o.json")]
    for i in range(0, len(extra), 2):  # a later flag overrides the default one
        argv += extra[i:i + 2]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []  # no database, no bundle


def test_stateful_workload_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "o.json"
    assert main(["serve", "--workload", "transformer-decode", "--param", "layers=1",
                 "--param", "d_model=16", "--param", "heads=2", "--param", "kv_len=4",
                 "--param", "vocab=10", "--device", "cpu", "--requests", "4",
                 "--db", f"sqlite:///{tmp_path / 'lb.db'}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "keeps per-batch state" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_sizes_file_with_junk_from_the_cli(tmp_path, capsys):
    f = tmp_path / "sizes.txt"
    f.write_text("4\n8\nlots\n")
    assert main(["serve", *TINY, "--batch-dist", str(f), "--no-db", "--out",
                 str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "line 3: 'lots' is not a batch size" in err and err.count("\n") == 1
    assert not (tmp_path / "o.json").exists()
