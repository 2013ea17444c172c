"""advise-capture and graph-memory on the command line; the graph-memory attribution on
the H200 probe's own rows; one GPU test that measures a real curve.

Bad input: exit 2, one line on stderr naming the value or line, nothing written."""

from __future__ import annotations

import json

import pytest

from contract import bundle as fmt
from contract import capture_sizes as cs
from contract import graph_memory as gm
from tests.command_line import cli
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "capture"
MIB = 1 << 20


def probe_rows(variant: str, shape: str = "mlp") -> list[gm.Capture]:
    doc = json.loads((ROOT / f"bench/results/h200-capture-memory-{shape}.json").read_text())
    return [gm.Capture(r["batch"], r["capture_s"], r["pool_bytes"], r["allocated_bytes"],
                          r["device_used_bytes"]) for r in doc["variants"][variant]["rows"]]


# --- attribution, on what the H200 measured ------------------------------------------------

def test_attribution_of_the_h200_probe():
    a = gm.attribute({"shared": probe_rows("shared-clear"),
                      "private": probe_rows("private-clear")})
    assert a["fixed_bytes_per_capture"] == pytest.approx(34 * MIB, rel=0.01)  # cuBLAS 32 + 2
    assert a["per_row_bytes"] < 1024  # the mlp's activations are too small to see
    assert a["shared_first_bytes"] == 34 * MIB and a["shared_total_bytes"] == 34 * MIB
    assert a["shared_saves_bytes"] == 306 * MIB
    assert a["shared_per_graph_bytes"] == pytest.approx(2 * MIB / 9)
    assert a["first_capture_s"] > 10 * a["capture_s"]  # the first pays cuBLAS's set-up


def test_attribution_sees_activations_on_the_wide_shape():
    a = gm.attribute({"private": probe_rows("private-clear", "wide")})
    # 8 x Linear(4096) bf16: the first capture (512 rows) holds 54 MiB, later ones 34 MiB
    assert a["fixed_bytes_per_capture"] > 30 * MIB and a["per_row_bytes"] > 0


def test_curve_from_a_document_round_trips(tmp_path):
    series = {"shared": probe_rows("shared-clear"), "private": probe_rows("private-clear")}
    doc = gm.make_doc({"gpu_name": "NVIDIA H200"}, {"workload": "mlp"},
                      [r.batch_size for r in series["shared"]], series)
    path = tmp_path / "gm.json"
    path.write_text(json.dumps(doc))
    curve = gm.curve(gm.read_doc(json.loads(path.read_text()), str(path)), str(path))
    assert curve.fixed_bytes == pytest.approx(34 * MIB, rel=0.01)
    assert curve.pool_bytes([512, 256, 1]) < 35 * MIB
    assert curve.pool_bytes([512, 256, 1], shared=False) > 100 * MIB
    assert "NVIDIA H200" in curve.source
    rows = gm.table_rows(gm.read_doc(doc, "x"))
    assert rows[0]["marginal_mib"] == 34 and rows[1]["marginal_mib"] == 0


def test_bad_documents_and_sizes():
    with pytest.raises(gm.GraphMemoryError, match="not a launchbench.graph-memory"):
        gm.read_doc({"format": "launchbench.run"}, "f.json")
    with pytest.raises(gm.GraphMemoryError, match="'x' is not a batch size"):
        gm.parse_sizes("1,x,4")
    with pytest.raises(gm.GraphMemoryError, match="appears twice"):
        gm.parse_sizes("4,4")
    assert gm.parse_sizes("1,2,512") == [512, 2, 1]


# --- advise-capture ------------------------------------------------------------------------

def test_advise_capture_vllm(capsys):
    rc, out, err = cli(capsys, "advise-capture", "--from",
                       str(DATA / "vllm_cudagraph_metrics.log"), "--engine", "vllm",
                       "--budget-mib", "64")
    assert rc == 0, err
    assert "proposed" in out and "default" in out and "--compilation-config" in out
    line = next(ln for ln in out.splitlines() if "--compilation-config" in ln)
    cfg = json.loads(line.split("'")[1])
    assert cfg["cudagraph_capture_sizes"] == sorted(cfg["cudagraph_capture_sizes"])
    assert cfg["max_cudagraph_capture_size"] == cfg["cudagraph_capture_sizes"][-1] == 131


def test_advise_capture_sglang_json_and_kv_budget(capsys):
    rc, out, err = cli(capsys, "advise-capture", "--from", str(DATA / "sglang_decode.log"),
                       "--engine", "sglang", "--budget-kv-tokens", "2048",
                       "--kv-bytes-per-token", "131072", "--gpu-mem-gib", "141", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    # The log's largest batch is 64: the default list (to 256) is compared up to 64.
    assert doc["budget_mib"] == 256 and doc["default"]["sizes"][-1] == 64
    assert doc["config"][0].startswith("--cuda-graph-bs ")
    assert doc["proposed"]["sizes"][-1] == 64 and doc["proposed"]["graphless_share"] == 0
    assert doc["curve_borrowed"].startswith("curve borrowed: no --workload given")


def test_advise_capture_names_the_curve_it_borrows(capsys, tmp_path):
    db = f"sqlite:///{tmp_path / 'lb.db'}"
    args = ("advise-capture", "--from", str(DATA / "sglang_decode.log"), "--engine",
            "sglang", "--budget-mib", "256", "--workload", "hf-causal-lm", "--db", db)
    from db.engine import make_engine

    make_engine(db).dispose()  # an empty database: no graph-memory run of it
    rc, out, err = cli(capsys, *args)
    assert rc == 0, err
    note = out.splitlines()[1]
    assert note.startswith("note: curve borrowed: no graph-memory run of hf-causal-lm "
                           "stored")
    assert "graph-memory --workload hf-causal-lm" in note
    rc, out, err = cli(capsys, *args[:-4], "--workload", " ", "--db", db)
    assert rc == 2 and "--workload ' '" in err


def test_advise_capture_torch_with_a_measured_curve(capsys, tmp_path):
    series = {"shared": probe_rows("shared-clear")}
    doc = gm.make_doc({"gpu_name": "NVIDIA H200"}, {"workload": "mlp"}, [1, 512], series)
    curve = tmp_path / "curve.json"
    curve.write_text(json.dumps(doc))
    rc, out, err = cli(capsys, "advise-capture", "--from", str(DATA / "batch_sizes.txt"),
                       "--engine", "torch", "--budget-mib", "40", "--curve", str(curve))
    assert rc == 0, err
    assert "inductor_config.triton.cudagraph_capture_sizes = (" in out
    assert "NVIDIA H200" in out


@pytest.mark.parametrize("argv,needle", [
    (["--from", "EMPTY", "--engine", "vllm", "--budget-mib", "64"], "empty"),
    (["--from", "NOLINE", "--engine", "sglang", "--budget-mib", "64", "--format",
      "sglang-log"], "no SGLang 'Decode batch"),
    (["--from", "BAD", "--engine", "vllm", "--budget-mib", "64"], "line 2: '7.5'"),
    (["--from", "OK", "--engine", "vllm", "--budget-mib", "8"], "below one graph"),
    (["--from", "OK", "--engine", "vllm"], "no budget"),
    (["--from", "OK", "--engine", "vllm", "--budget-mib", "-4"], "--budget-mib: -4"),
    (["--from", "OK", "--engine", "vllm", "--budget-mib", "64", "--spec-tokens", "x"],
     "--spec-tokens: 'x'"),
    (["--from", "OK", "--engine", "vllm", "--budget-mib", "64", "--curve", "12", "--db",
      "sqlite:////nonexistent/lb.db"], "does not exist"),
    (["--from", "OK", "--engine", "vllm", "--budget-mib", "64", "--curve", "no-such.json"],
     "neither a run id nor a file"),
    (["--from", "/nonexistent/f.txt", "--engine", "vllm", "--budget-mib", "64"],
     "does not exist"),
])
def test_advise_capture_bad_input(capsys, tmp_path, argv, needle):
    files = {"EMPTY": "", "NOLINE": "INFO started\n", "BAD": "4\n7.5\n", "OK": "1\n8\n"}
    argv = [str(tmp_path / a) if a in files else a for a in argv]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = cli(capsys, "advise-capture", *argv)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_graph_memory_refuses_cpu_and_writes_nothing(capsys, tmp_path):
    out = tmp_path / "gm.json"
    rc, _, err = cli(capsys, "graph-memory", "--workload", "mlp", "--device", "cpu",
                     "--out", str(out))
    assert rc == 2 and "needs cuda" in err and not out.exists()
    rc, _, err = cli(capsys, "graph-memory", "--workload", "mlp", "--sizes", "4,-1",
                     "--out", str(out))
    assert rc == 2 and "'-1' is not a batch size" in err and not out.exists()


@pytest.mark.gpu
def test_graph_memory_on_the_gpu(capsys, tmp_path):
    out = tmp_path / "gm.json"
    rc, text, err = cli(capsys, "graph-memory", "--workload", "mlp", "--sizes",
                        "1,8,64,512", "--pool", "both", "--no-db", "--out", str(out))
    assert rc == 0, err
    doc = fmt.graph_memory_doc(json.loads(out.read_text()), str(out))  # the run's bundle
    a = doc["attribution"]
    assert [r.batch_size for r in doc["rows"]["shared"]] == [512, 64, 8, 1]
    assert a["private_total_bytes"] >= a["shared_total_bytes"] > 0
    curve = gm.curve(doc, str(out))
    assert curve.pool_bytes([1, 8, 64, 512]) > 0
    assert isinstance(curve, cs.Curve)


def test_readme_worked_example_is_the_real_output(capsys):
    readme = (ROOT / "README.md").read_text()
    start = readme.index("$ python -m runner advise-capture --from tests/data/capture/")
    block = readme[start:readme.index("```", start)].splitlines()
    shown = block[2:]  # the command and its continuation line, then the output
    rc, out, _ = cli(capsys, "advise-capture", "--from",
                     "tests/data/capture/vllm_cudagraph_metrics.log", "--engine", "vllm",
                     "--budget-mib", "64")
    assert rc == 0 and out.splitlines() == [ln for ln in shown if ln]
