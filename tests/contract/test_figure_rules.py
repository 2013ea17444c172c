"""Figures that contradict each other or physical sense are refused where a bundle is read
(issue 48, item 2): import, the upload, `check --run FILE` and a writer's point share one
rule set (contract/figure_rules.py). Each refusal is one line naming the field."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from contract import bundle as fmt
from tests.command_line import cli
from tests.conftest import ROOT
from tests.synthetic import sweep_bundle

SAMPLES = sorted((ROOT / "data" / "samples").glob("*.json"))
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)  # the clock the time rules are held to


def _doc(**kw) -> dict:
    return sweep_bundle(batches=(8, 64), modes=("eager", "cuda-graph"), **kw)


def _first(doc: dict, **values) -> dict:
    doc["measurements"][0].update(values)
    return doc


def _every_step(doc: dict, factor: float) -> dict:
    for m in doc["measurements"]:
        if m.get("step_ms") is not None:
            m["step_ms"] *= factor
    return doc


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: _first(d, step_ms_p10=1.7976931348623157e308),
     "measurement 0 (eager batch 8): step_ms_p10 1.798e+308 is beyond any figure"),
    (lambda d: _first(d, step_ms_p10=4_000_000.0), "step_ms_p10 4e+06 ms is over an hour"),
    (lambda d: _first(d, step_ms_ci_low=2.0, step_ms_ci_high=2.1),
     "step_ms 1.4016 lies below its 95% interval (step_ms_ci_low 2)"),
    (lambda d: _first(d, step_ms_p10=0.1, step_ms_p90=0.2),
     "step_ms 1.4016 lies above its p10 and p90 (step_ms_p90 0.2)"),
    (lambda d: _first(d, step_ms_p10=1.5, step_ms_p90=1.4),
     "step_ms_p10 1.5 is above step_ms_p90 1.4"),
    (lambda d: _every_step(d, 1e308 / 2), "step_ms"),
    (lambda d: _every_step(d, 10.0), "measurement 0 (eager batch 8): step_ms 14.016 lies above"),
    (lambda d: _first(d, samples_ms=[1.0, 5e6]), "samples_ms holds 5e+06 ms, over an hour"),
    (lambda d: d["measurements"][3].update(speedup=99.0) or d,
     "measurement 3 (cuda-graph batch 64): speedup 99 lies above its 95% interval"),
    (lambda d: d["run"].update(finished_at="0001-01-01T00:00:00+00:00") or d,
     "run.finished_at 0001-01-01T00:00:00+00:00 is before 2000"),
    (lambda d: d["run"].update(created_at="2026-03-02T00:00:00+00:00",
                               finished_at="2026-03-01T00:00:00+00:00") or d,
     "run.finished_at 2026-03-01T00:00:00+00:00 is before run.created_at"),
    (lambda d: d["run"].update(created_at="2026-06-03T00:00:00+00:00",
                               finished_at=None) or d,
     "run.created_at 2026-06-03T00:00:00+00:00 is in the future"),
    (lambda d: d["environment"].update(gpu_memory_bytes=16 << 20) or d,
     "reserved_delta_bytes 33,554,432 bytes is more than the GPU's memory"),
])
def test_figures_that_contradict_each_other_are_refused_naming_the_field(mutate, expected):
    doc = mutate(_doc())
    with pytest.raises(fmt.BundleError) as e:
        fmt.validate(doc, now=NOW)
    assert expected in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_same_figures_consistent_are_accepted():
    doc = _doc()
    doc["run"].update(created_at="2026-05-31T23:00:00+00:00",
                      finished_at="2026-06-01T12:00:00+00:00")  # within a day's skew
    doc["environment"]["gpu_memory_bytes"] = 80 << 30
    assert fmt.validate(doc, now=NOW)["measurements"][0]["step_ms"] > 0


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_shipped_sample_still_imports(path):
    assert fmt.read(path)["run"]["uuid"]


def test_a_key_given_twice_is_refused_naming_it(tmp_path):
    text = fmt.dumps(_doc()).replace('"step_ms": ', '"step_ms": 99.0, "step_ms": ', 1)
    assert json.loads(text)["measurements"][0]["step_ms"] != 99.0  # json keeps the last
    with pytest.raises(fmt.BundleError) as e:
        fmt.loads(text, name="twice.json")
    assert str(e.value) == ("twice.json: the key 'step_ms' appears twice in one object "
                            "(which one counts is not clear: refused)")


def test_a_writer_cannot_store_a_point_that_contradicts_itself():
    m = _doc()["measurements"][0]
    m["step_ms_ci_high"] = m["step_ms"] / 2
    m["step_ms_ci_low"] = m["step_ms"] / 3
    with pytest.raises(fmt.BundleError, match="lies above its 95% interval"):
        fmt.check_measurement(m)


def _file(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("factor, expected", [(1e308 / 2, "step_ms"), (10.0, "lies above")])
def test_check_refuses_a_run_file_whose_steps_were_multiplied(capsys, tmp_path, monkeypatch,
                                                             factor, expected):
    """`check --run huge.json` (every step 1e308) printed '+inf% inconclusive ok' and
    exited 0; steps x10 printed '+900.0% inconclusive': both are refused now, exit 2."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = _file(tmp_path, "base.json", _doc())
    huge = _file(tmp_path, "huge.json", _every_step(_doc(), factor))
    rc, out, err = cli(capsys, "check", "--run", str(huge), "--baseline", str(base))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "huge.json" in err and expected in err


def test_check_refuses_a_run_file_with_a_key_given_twice(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = _file(tmp_path, "base.json", _doc())
    twice = tmp_path / "twice.json"
    twice.write_text(fmt.dumps(_doc()).replace('"step_ms": ', '"step_ms": 0.001, '
                                                              '"step_ms": ', 1))
    rc, out, err = cli(capsys, "check", "--run", str(twice), "--baseline", str(base))
    assert rc == 2 and "appears twice" in err and out == ""
