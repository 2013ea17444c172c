"""graph-memory and advise-capture against stored graph-memory runs: the CLI stores the run
(database and/or bundle), import / export / list carry it, and advise-capture --curve takes
a run id (or a file). The GPU part of graph-memory is replaced by the H200 probe's own rows
(tests/graph_memory_data.py); tests/runner/ops/test_capture_cli.py has the real GPU test."""

from __future__ import annotations

import json
import types

import pytest

from contract import bundle as fmt
from contract import graph_memory as gm
from tests.command_line import cli
from tests.conftest import ROOT
from tests.graph_memory_data import probe_bundle, probe_rows

DATA = ROOT / "tests" / "data" / "capture"
ADVISE = ["advise-capture", "--from", str(DATA / "vllm_cudagraph_metrics.log"), "--engine",
          "vllm", "--budget-mib", "64"]


@pytest.fixture
def stored(tmp_path, capsys, sqlite_url):
    """A graph-memory run imported from its bundle file: (db url, run id, file)."""
    path = tmp_path / "gm.json"
    fmt.write(path, probe_bundle())
    rc, out, err = cli(capsys, "import", str(path), "--db", sqlite_url)
    assert rc == 0, err
    assert out.startswith("imported run 1 ") and "graph-memory, 20 captures of 10 sizes" in out
    return sqlite_url, 1, path


def test_import_list_export_round_trip(stored, capsys, tmp_path):
    url, run_id, path = stored
    rc, out, _ = cli(capsys, "list", "--db", url)
    assert rc == 0 and "mlp [graph-memory]" in out and "NVIDIA H200" in out
    back = tmp_path / "back.json"
    rc, out, err = cli(capsys, "export", str(run_id), "--out", str(back), "--db", url)
    assert rc == 0 and "graph-memory, 20 captures" in out, err
    again = fmt.read(back)
    assert again[gm.SECTION] == fmt.read(path)[gm.SECTION]
    rc, out, _ = cli(capsys, "import", str(back), "--db", url)
    assert rc == 0 and out.startswith("already imported: run 1")


def test_advise_capture_takes_a_stored_run_id(stored, capsys):
    url, run_id, path = stored
    rc, by_id, err = cli(capsys, *ADVISE, "--curve", str(run_id), "--db", url, "--json")
    assert rc == 0, err
    assert json.loads(by_id)["curve"].startswith(f"run {run_id} (NVIDIA H200, mlp)")
    rc, by_file, err = cli(capsys, *ADVISE, "--curve", str(path), "--json")
    assert rc == 0, err
    a, b = json.loads(by_id), json.loads(by_file)
    assert a["proposed"] == b["proposed"] and a["default"] == b["default"]


@pytest.mark.parametrize("ref,needle", [
    ("2", "--curve 2: run 2 is a sweep run, not a graph-memory run"),
    ("99", "--curve 99: run 99 does not exist"),
    ("0", "RUN_ID '0' is not a run id"),
])
def test_a_run_id_that_is_no_graph_memory_run_is_named(stored, capsys, tmp_path, ref,
                                                        needle):
    url, _, _ = stored
    sweep = tmp_path / "sweep.json"
    fmt.write(sweep, fmt.make_bundle({"device": "cpu"}, {
        "uuid": "s", "workload": "mlp", "created_at": fmt.now_iso(), "status": "done"},
        [fmt.empty_measurement("eager", 8)]))
    assert cli(capsys, "import", str(sweep), "--db", url)[0] == 0
    rc, out, err = cli(capsys, *ADVISE, "--curve", ref, "--db", url)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert needle in err, err


@pytest.fixture
def fake_gpu(monkeypatch):
    """graph-memory's GPU calls answered by the probe's rows: what reaches the store is
    what a real run hands it."""
    import torch

    from contract.run_record import Environment
    from runner.core import environment, workloads
    from runner.core import graph_memory as core

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(workloads, "resolve", lambda name, params: types.SimpleNamespace(
        name=name, params={}, dtype="float32", build=lambda device: (None, None)))
    monkeypatch.setattr(environment, "capture", lambda device: Environment(
        device="cuda", gpu_name="NVIDIA H200", torch_version="2.11.0+cu130"))
    monkeypatch.setattr(core, "capture_series",
                        lambda model, make_input, sizes, pool, device, progress:
                        [r for r in probe_rows(f"{pool}-clear") if r.batch_size in sizes])


def test_graph_memory_stores_the_run_and_writes_the_bundle(fake_gpu, capsys, tmp_path,
                                                           sqlite_url):
    out = tmp_path / "gm.json"
    rc, text, err = cli(capsys, "graph-memory", "--workload", "mlp", "--sizes",
                        "1,2,4,8,16,32,64,128,256,512", "--db", sqlite_url, "--out", str(out))
    assert rc == 0, err
    assert "graph-memory run 1 stored" in text and "--curve 1" in text
    doc = fmt.read(out)
    assert doc["run"]["kind"] == "graph-memory" and doc["run"]["status"] == "done"
    assert doc[gm.SECTION]["attribution"]["shared_total_bytes"] == 34 << 20
    rc, listed, _ = cli(capsys, "list", "--db", sqlite_url)
    assert "[graph-memory]" in listed
    rc, text, err = cli(capsys, *ADVISE, "--curve", "1", "--db", sqlite_url)
    assert rc == 0 and "priced by run 1 (NVIDIA H200, mlp)" in text, err


def test_graph_memory_no_db_writes_only_the_bundle(fake_gpu, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCHBENCH_DB", f"sqlite:///{tmp_path / 'never.db'}")
    out = tmp_path / "gm.json"
    rc, _, err = cli(capsys, "graph-memory", "--workload", "mlp", "--sizes", "1,8",
                     "--no-db", "--out", str(out))
    assert rc == 0, err
    assert fmt.read(out)[gm.SECTION]["sizes"] == [8, 1]
    assert not (tmp_path / "never.db").exists()


@pytest.mark.parametrize("argv,needle", [
    (["--no-db"], "--no-db without --out"),
    (["--out", "/nonexistent/dir/gm.json"], "does not exist"),
    (["--sizes", "8,x"], "'x' is not a batch size"),
])
def test_graph_memory_bad_storage_flags_write_nothing(fake_gpu, capsys, tmp_path,
                                                      monkeypatch, argv, needle):
    monkeypatch.setenv("LAUNCHBENCH_DB", f"sqlite:///{tmp_path / 'never.db'}")
    rc, out, err = cli(capsys, "graph-memory", "--workload", "mlp", *argv)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err, err
    assert list(tmp_path.iterdir()) == []


def test_graph_memory_out_dash_writes_the_bundle_alone_on_stdout(fake_gpu, capfd, tmp_path):
    # Issue 46: `--out -` wherever --out exists; the run's table goes to stderr. capfd:
    # the command redirects file descriptor 1 itself.
    rc, text, err = cli(capfd, "graph-memory", "--workload", "mlp", "--sizes", "1,2,4",
                        "--no-db", "--out", "-")
    assert rc == 0, err
    doc = json.loads(text)  # stdout is the bundle and nothing else
    assert doc["run"]["kind"] == "graph-memory" and doc["run"]["status"] == "done"
    assert "graph-memory" in err and "--out" not in text
