"""Bundle validation: every malformed file is refused with one line naming what is wrong."""

import json
import uuid

import pytest

from contract import bundle as fmt


def good_bundle(**run) -> dict:
    m = fmt.empty_measurement("eager", 8)
    m.update(step_ms=1.5, step_ms_p10=1.4, step_ms_p90=1.7, samples=3,
             samples_ms=[1.4, 1.5, 1.7])
    g = fmt.empty_measurement("compile", 8)
    g.update(step_ms=0.9, samples=3, samples_ms=[0.9, 0.9, 1.0], reserved_delta_bytes=-4096)
    return fmt.make_bundle(
        {"device": "cpu", "torch_version": "2.13.0"},
        {"uuid": str(uuid.uuid4()), "workload": "mlp", "created_at": fmt.now_iso(),
         "status": "done", "workload_params": {"depth": 2}, **run},
        [m, g])


def test_good_bundle_round_trips_through_a_file(tmp_path):
    doc = good_bundle(label="x")
    path = fmt.write(tmp_path / "run.json", doc)
    back = fmt.read(path)
    assert back == fmt.validate(doc)
    assert back["measurements"][1]["reserved_delta_bytes"] == -4096  # signed field allowed
    assert back["measurements"][0]["gpu_busy_ms"] is None  # unknown stays unknown
    assert not list(tmp_path.glob(".run.json.*"))  # no temp file left behind


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.update(format="something.else"), "wrong format 'something.else'"),
    (lambda d: d.pop("format"), "bundle field 'format' is missing"),
    (lambda d: d.update(version=8), "unsupported bundle version 8"),
    (lambda d: d["measurements"][0].update(stop_reason="tired"), "stop_reason 'tired'"),
    (lambda d: d["measurements"][0].update(noisy="yes"), "noisy 'yes'"),
    (lambda d: d["measurements"][0].update(launch_us_rounds=[1, -2]),
     "launch_us_rounds[1] -2 is negative"),
    (lambda d: d["measurements"][0].update(speedup_ci_low=float("inf")), "speedup_ci_low"),
    (lambda d: d.update(version="1"), "unsupported bundle version '1'"),
    (lambda d: d.update(measurements={}), "measurements {} must be a list"),
    (lambda d: d["environment"].update(device="tpu"), "environment.device 'tpu'"),
    (lambda d: d["run"].update(uuid=""), "run.uuid ''"),
    (lambda d: d["run"].update(status="finished"), "run.status 'finished'"),
    (lambda d: d["run"].update(created_at="yesterday"), "run.created_at 'yesterday'"),
    (lambda d: d["measurements"][0].update(mode="turbo"),
     "measurement 0: mode 'turbo' is not one of eager"),
    (lambda d: d["measurements"][0].update(step_ms=-1.0), "step_ms -1.0 is negative"),
    (lambda d: d["measurements"][1].update(setup_s=-0.5), "setup_s -0.5 is negative"),
    (lambda d: d["measurements"][0].update(samples_ms=[1.0, -2.0]), "samples_ms"),
    (lambda d: d["measurements"][0].update(step_ms="fast"),
     "step_ms 'fast' must be a number or null"),
    (lambda d: d["measurements"][0].update(batch_size=0), "batch_size 0"),
    (lambda d: d["measurements"][0].update(status="great"), "status 'great'"),
    (lambda d: d["measurements"][1].update(mode="eager"), "duplicate point"),
])
def test_invalid_bundles_are_refused_naming_the_value(mutate, expected):
    doc = good_bundle()
    mutate(doc)
    with pytest.raises(fmt.BundleError) as e:
        fmt.validate(doc)
    assert expected in _one_line(e)


def test_non_object_top_level():
    with pytest.raises(fmt.BundleError, match="top level is list"):
        fmt.validate([1, 2])


@pytest.mark.parametrize("content, expected", [
    ("", "not valid JSON"),
    ("hello", "not valid JSON"),
    (None, "truncated"),  # half of a good file
])
def test_unreadable_files(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    if content is None:
        content = fmt.dumps(good_bundle())
        content = content[: len(content) // 2]
    path.write_text(content)
    with pytest.raises(fmt.BundleError) as e:
        fmt.read(path)
    assert expected in _one_line(e) and "bad.json" in str(e.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(fmt.BundleError, match="does not exist"):
        fmt.read(tmp_path / "nope.json")
    with pytest.raises(fmt.BundleError, match="is not a file"):
        fmt.read(tmp_path)


def test_binary_file(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(fmt.BundleError, match="cannot read bundle file"):
        fmt.read(path)


def test_nan_is_not_a_number(tmp_path):
    text = fmt.dumps(good_bundle()).replace('"step_ms": 1.5', '"step_ms": NaN')
    with pytest.raises(fmt.BundleError, match="step_ms nan is not a finite number"):
        fmt.loads(text)
    assert json.loads(text)  # Python's json would have taken it: the check is ours


def test_check_writable(tmp_path):
    assert fmt.check_writable(tmp_path / "ok.json") == tmp_path / "ok.json"
    with pytest.raises(fmt.BundleError, match="is a directory"):
        fmt.check_writable(tmp_path)
    with pytest.raises(fmt.BundleError, match="does not exist"):
        fmt.check_writable(tmp_path / "no" / "x.json")


def test_text_fields_the_database_would_refuse_are_named():
    from contract import bundle as fmt

    doc = fmt.make_bundle({"device": "cpu"}, {"uuid": "u-long-label", "workload": "mlp",
                          "created_at": fmt.now_iso(), "status": "done",
                          "label": "x" * 201}, [])
    with pytest.raises(fmt.BundleError, match=r"run.label .* longer than 200"):
        fmt.validate(doc)
    doc["run"]["label"] = {"not": "text"}
    with pytest.raises(fmt.BundleError, match="run.label .* must be text"):
        fmt.validate(doc)
    doc["run"]["label"] = None
    doc["environment"]["gpu_count"] = -1
    with pytest.raises(fmt.BundleError, match="environment.gpu_count -1"):
        fmt.validate(doc)
