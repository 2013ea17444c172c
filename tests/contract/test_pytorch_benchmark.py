"""`export --format pytorch-benchmark` (issue 40 item 4): the records of PyTorch's OSS
benchmark database, checked against the documented format written out here by hand (not
derived from contract/pytorch_benchmark.py), on a shipped sample and on a synthetic
sweep with a failed and an unsupported point.

The format, from pytorch/test-infra clickhouse_db_schema/oss_ci_benchmark_v3/schema.sql
(columns and types) and the pytorch/pytorch wiki "PyTorch OSS benchmark infra", "Benchmark
results format" (benchmark.name and model.name required, all else optional);
.github/scripts/upload_benchmark_results.py reads a JSON list of records and skips one
without "metric".
"""

from __future__ import annotations

import json

import pytest

from contract import bundle as fmt
from contract import pytorch_benchmark as pb
from tests.command_line import cli
from tests.conftest import ROOT
from tests.synthetic import sweep_bundle

SAMPLES = ROOT / "data" / "samples"

# The schema's types, by hand. STR: String; U32: UInt32; F32: Float32; MAP: Map(String,
# String); a dict: a named Tuple; ("array", T): Array(T); ("map", T): Map(String, T).
STR, U32, F32, MAP = "String", "UInt32", "Float32", "Map(String, String)"
SCHEMA = {
    "timestamp": "UInt64", "schema_version": STR, "name": STR, "repo": STR,
    "head_branch": STR, "head_sha": STR, "workflow_id": "UInt64", "run_attempt": U32,
    "job_id": "UInt64", "servicelab_experiment_id": "UInt64",
    "servicelab_trial_id": "UInt64",
    "runners": ("array", {"name": STR, "type": STR, "cpu_info": STR, "cpu_count": U32,
                          "mem_info": STR, "avail_mem_in_gb": U32, "gpu_info": STR,
                          "gpu_count": U32, "gpu_mem_info": STR,
                          "avail_gpu_mem_in_gb": U32, "extra_info": MAP}),
    "benchmark": {"name": STR, "mode": STR, "dtype": STR, "extra_info": MAP},
    "model": {"name": STR, "type": STR, "backend": STR, "origins": ("array", STR),
              "extra_info": MAP},
    "inputs": ("map", {"dtype": STR, "extra_info": MAP}),
    "dependencies": ("map", {"repo": STR, "branch": STR, "sha": STR, "version": STR,
                             "extra_info": MAP}),
    "metric": {"name": STR, "benchmark_values": ("array", F32), "target_value": F32,
               "extra_info": MAP},
}
REQUIRED = [("benchmark", "name"), ("model", "name"), ("metric", "name"),
            ("metric", "benchmark_values")]
# The schema's comment on benchmark.mode: "training or inference".
BENCHMARK_MODES = ("training", "inference")


def shape_errors(value, kind, path="record") -> list[str]:
    """Where `value` does not fit the schema's type `kind` (a field may be absent)."""
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        errors = [f"{path}.{k}: not in the schema" for k in value if k not in kind]
        for k, v in value.items():
            if k in kind:
                errors += shape_errors(v, kind[k], f"{path}.{k}")
        return errors
    if isinstance(kind, tuple):
        container, item = kind
        if container == "array":
            if not isinstance(value, list):
                return [f"{path}: not a list"]
            return [e for i, v in enumerate(value) for e in shape_errors(v, item, f"{path}[{i}]")]
        if not isinstance(value, dict):
            return [f"{path}: not a map"]
        return [e for k, v in value.items() for e in shape_errors(v, item, f"{path}[{k}]")]
    if kind == STR:
        return [] if isinstance(value, str) else [f"{path}: {value!r} is not text"]
    if kind == MAP:
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in value.items()):
            return [f"{path}: {value!r} is not a map of text to text"]
        return []
    if kind in (U32, "UInt64"):
        top = 2**32 if kind == U32 else 2**64
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < top
        return [] if ok else [f"{path}: {value!r} is not a {kind}"]
    if kind == F32:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
            and abs(value) < 3.4e38
        return [] if ok else [f"{path}: {value!r} is not a {kind}"]
    raise AssertionError(kind)


def check_record(r: dict) -> None:
    assert shape_errors(r, SCHEMA) == []
    for outer, inner in REQUIRED:
        assert inner in r.get(outer, {}), f"{outer}.{inner} is required"
    assert r["benchmark"]["name"] and r["model"]["name"] and r["metric"]["name"]
    assert r["metric"]["benchmark_values"], "a record with no value"
    assert r["benchmark"].get("mode", "inference") in BENCHMARK_MODES


def file_records(tmp_path, export: pb.Export) -> list[dict]:
    """What the uploader would read: the written text, parsed back."""
    path = fmt.write_text(tmp_path / "records.json", pb.dumps(export))
    doc = json.loads(path.read_text())
    assert isinstance(doc, list) and all("metric" in r for r in doc)
    return doc


def test_a_shipped_sweep_gives_one_record_per_point_and_metric(tmp_path):
    bundle = fmt.read(SAMPLES / "h200-mlp.json")
    export = pb.records(bundle)
    records = file_records(tmp_path, export)
    for r in records:
        check_record(r)
    ok = [m for m in bundle["measurements"] if m["status"] == "ok" and m["step_ms"] is not None]
    with_speedup = [m for m in ok if m["mode"] != "eager" and m["speedup"] is not None]
    assert len(records) == len(ok) + len(with_speedup) and export.left_out == []
    steps = {(r["model"]["backend"], r["benchmark"]["extra_info"]["batch_size"]):
             r["metric"]["benchmark_values"] for r in records
             if r["metric"]["name"] == pb.STEP_METRIC}
    assert steps == {(m["mode"], str(m["batch_size"])): [m["step_ms"]] for m in ok}
    speedups = {(r["model"]["backend"], r["benchmark"]["extra_info"]["batch_size"]):
                r["metric"]["benchmark_values"][0] for r in records
                if r["metric"]["name"] == pb.SPEEDUP_METRIC}
    assert speedups == {(m["mode"], str(m["batch_size"])): m["speedup"] for m in with_speedup}
    r = records[0]
    env = bundle["environment"]
    assert r["runners"][0]["gpu_info"] == env["gpu_name"] == "NVIDIA H200"
    assert r["runners"][0]["avail_gpu_mem_in_gb"] == env["gpu_memory_bytes"] // 2**30
    assert r["dependencies"]["torch"]["version"] == env["torch_version"]
    assert r["benchmark"]["extra_info"]["run_uuid"] == bundle["run"]["uuid"]
    assert r["model"]["name"] == "mlp" and r["benchmark"]["mode"] == "inference"
    assert json.loads(r["model"]["extra_info"]["workload_params"]) == \
        bundle["run"]["workload_params"]


def test_failed_and_unsupported_points_are_left_out_and_named(tmp_path):
    doc = sweep_bundle(device="cpu", gpu=None, batches=(1, 8),
                       failing={("compile", 8): "Inductor failed"})
    export = pb.records(fmt.validate(doc))
    records = file_records(tmp_path, export)
    for r in records:
        check_record(r)
    got = {(r["model"]["backend"], r["benchmark"]["extra_info"]["batch_size"])
           for r in records}
    assert got == {("eager", "1"), ("eager", "8"), ("compile", "1")}
    assert {(lo.mode, lo.batch_size) for lo in export.left_out} == {
        ("compile", 8), ("reduce-overhead", 1), ("reduce-overhead", 8),
        ("cuda-graph", 1), ("cuda-graph", 8)}
    why = {(lo.mode, lo.batch_size): lo.reason for lo in export.left_out}
    assert why[("compile", 8)] == "status error (Inductor failed)"
    assert why[("cuda-graph", 1)].startswith("status unsupported")
    # A CPU run: no GPU to name, none made up; the runner's kind is the device.
    runner = records[0]["runners"][0]
    assert "gpu_info" not in runner and "gpu_count" not in runner
    assert runner["type"] == "cpu" and runner["extra_info"]["device"] == "cpu"
    # Text values only in every extra_info, even for numbers and flags.
    step = next(r for r in records if r["metric"]["name"] == pb.STEP_METRIC)
    assert step["metric"]["extra_info"]["noisy"] == "false"
    assert float(step["metric"]["extra_info"]["ci95_low"]) < \
        step["metric"]["benchmark_values"][0]


def test_training_step_is_training():
    doc = sweep_bundle(workload="train-step", batches=(1,), modes=("eager",))
    (r,) = pb.records(fmt.validate(doc)).records
    assert r["benchmark"]["mode"] == "training"


def test_a_published_run_without_step_times_gives_no_record():
    export = pb.records(fmt.read(SAMPLES / "published-v100-cuda-graphs-blog.json"))
    assert export.records == [] and export.left_out
    assert all(lo.reason == "no step time" for lo in export.left_out)


@pytest.mark.parametrize("name", ["h200-serve-mlp.json", "h200-graph-memory-mlp.json"])
def test_runs_that_are_not_sweeps_are_refused(name):
    with pytest.raises(pb.ExportError, match="holds a sweep's points only"):
        pb.records(fmt.read(SAMPLES / name))


# --- the command ------------------------------------------------------------------------

@pytest.fixture
def stored(tmp_path, monkeypatch, capsys):
    """A database with a synthetic CPU sweep (run 1, one failed point), the serve sample
    (run 2) and a sweep whose every point is unsupported (run 3)."""
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY", raising=False)
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    sweep = fmt.write(tmp_path / "a.json", sweep_bundle(
        device="cpu", gpu=None, batches=(1, 8), failing={("compile", 8): "boom"}))
    none = fmt.write(tmp_path / "c.json", sweep_bundle(
        device="cpu", gpu=None, batches=(1,), modes=("cuda-graph",)))
    for f in (sweep, SAMPLES / "h200-serve-mlp.json", none):
        assert cli(capsys, "import", str(f), "--db", url)[0] == 0
    return url


def test_export_writes_the_records(stored, tmp_path, capsys):
    out = tmp_path / "pt.json"
    rc, stdout, err = cli(capsys, "export", "1", "--format", "pytorch-benchmark",
                          "--out", str(out), "--db", stored)
    assert rc == 0 and err == ""
    records = json.loads(out.read_text())
    for r in records:
        check_record(r)
    assert len(records) == 4  # eager 1, 8; compile 1: step time; compile 1: speedup
    assert "4 pytorch-benchmark records" in stdout
    assert "left out (no figure to give): compile batch 8: status error (boom)" in stdout
    # The default stays the bundle, which import reads back.
    rc, _, _ = cli(capsys, "export", "1", "--out", str(tmp_path / "b.json"), "--db", stored)
    assert rc == 0 and fmt.read(tmp_path / "b.json")["format"] == fmt.FORMAT


@pytest.mark.parametrize("argv, expected", [
    (["1", "--format", "csv"], "'csv'"),
    (["1", "--format", ""], "--format"),
    (["2", "--format", "pytorch-benchmark"], "serve run"),
    (["3", "--format", "pytorch-benchmark"], "no point with a step time"),
    (["9", "--format", "pytorch-benchmark"], "run 9 does not exist"),
])
def test_export_refuses_in_one_line_and_writes_nothing(stored, tmp_path, capsys, argv,
                                                         expected):
    out = tmp_path / "x.json"
    rc, stdout, err = cli(capsys, "export", *argv, "--out", str(out), "--db", stored)
    assert rc == 2 and err.count("\n") == 1 and expected in err, err
    assert not out.exists() and list(tmp_path.glob(".x.json.*")) == []
