"""Issue 11: nothing imported can break the importers or the pages, a stored uuid with
other content is a conflict, runs can be deleted, URL ids are ASCII digits only."""

from __future__ import annotations

import copy
import json

import pytest

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.run_record import Environment, Run
from db.engine import make_engine
from db.store import delete_run, export_bundle, import_bundle
from pages.logic import links
from tests.apptest import open_app
from tests.command_line import cli
from tests.conftest import ROOT
from tests.db_snapshot import snapshot

SAMPLE = ROOT / "data" / "samples" / "h200-mlp.json"
def sample() -> dict:
    return json.loads(SAMPLE.read_text())


def _cli(capsys, *argv) -> tuple[int, str]:
    rc, out, err = cli(capsys, *argv)
    return rc, out + err


def _write(tmp_path, body: str, name: str = "b.json") -> str:
    p = tmp_path / name
    p.write_text(body, encoding="utf-8", errors="surrogatepass")
    return str(p)


def _text_with(path: list, raw: str) -> str:
    """The sample as JSON text with the value at `path` replaced by raw JSON text."""
    doc = sample()
    obj = doc
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = "__RAW__"
    return json.dumps(doc).replace('"__RAW__"', raw)


CASES = [
    (["run", "workload_params", "x"], "[" * 5000 + "]" * 5000, "nested deeper"),
    (["run", "workload_params", "x"], "[" * 900 + "]" * 900, "nested deeper"),
    (["measurements", 0, "reserved_delta_bytes"], str(2**63), "outside signed 64 bits"),
    (["measurements", 0, "samples"], "1e30", "whole number"),
    (["measurements", 0, "step_ms"], "1e400", "not a finite number"),
    (["environment", "torch_version"], '"\\ud800"', "U+D800"),
    (["run", "label"], '"a\\u0000b"', "U+0000"),
    (["run", "label"], '"a\\u001bb"', "U+001B"),
    (["version"], "true", "unsupported bundle version"),
    (["measurements", 0, "message"], json.dumps("x" * 5_000_000), "more than"),
    (["measurements", 0, "details"], '{"k": ' + "1" * 5000 + "}", "cannot be read"),
]


@pytest.mark.parametrize(("path", "raw", "expected"), CASES,
                         ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_cli_import_refuses_with_one_line_and_writes_nothing(capsys, tmp_path, path, raw,
                                                             expected):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    rc, out = _cli(capsys, "import", _write(tmp_path, _text_with(path, raw)), "--db", url)
    assert rc == 2, out
    assert expected in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    assert not (tmp_path / "lb.db").exists()  # refused before the database was opened


def test_twenty_thousand_points_are_refused():
    doc = sample()
    m = doc["measurements"][0]
    doc["measurements"] = [{**m, "batch_size": 1 + i % 65536, "mode": fmt.MODES[i % 4]}
                           for i in range(20_000)]
    with pytest.raises(fmt.BundleError, match="more than"):
        fmt.validate(doc)


def test_same_uuid_other_content_is_a_conflict_naming_both(any_url, capsys, tmp_path):
    rc, out = _cli(capsys, "import", str(SAMPLE), "--db", any_url)
    assert rc == 0, out
    rc, out = _cli(capsys, "import", str(SAMPLE), "--db", any_url)
    assert rc == 0 and "already imported" in out
    doc = sample()
    doc["measurements"][0]["message"] = "other content"
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(doc))
    engine = make_engine(any_url)
    before = snapshot(engine)
    rc, out = _cli(capsys, "import", str(changed), "--db", any_url)
    assert rc == 2 and "conflict" in out and "changed.json" in out and "run 1" in out, out
    assert doc["run"]["uuid"] in out
    assert snapshot(engine) == before
    # The exported run (version 3, times in UTC) is the same content, not a conflict.
    exported = import_bundle(engine, fmt.validate(json.loads(fmt.dumps(
        export_bundle(engine, 1)))))
    assert exported == (1, False)
    engine.dispose()


def test_delete_removes_run_points_and_sections(any_url, capsys, monkeypatch):
    serve = ROOT / "data" / "samples" / "h200-serve-mlp.json"
    for f in (SAMPLE, serve):
        assert _cli(capsys, "import", str(f), "--db", any_url)[0] == 0
    engine = make_engine(any_url)
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    rc, out = _cli(capsys, "delete", "2", "--db", any_url)
    assert rc == 2 and "read-only" in out
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY")
    rc, out = _cli(capsys, "delete", "2", "--db", any_url)
    assert rc == 0 and "deleted run 2" in out, out
    snap = snapshot(engine)
    assert snap["runs"][0] == 1 and snap["serve_configs"][0] == 0
    assert snap["serve_results"][0] == 0 and snap["serve_profile"][0] == 0
    rc, out = _cli(capsys, "delete", "1", "--db", any_url)
    assert rc == 0 and snapshot(engine)["measurements"][0] == 0
    rc, out = _cli(capsys, "delete", "1", "--db", any_url)
    assert rc == 2 and "does not exist" in out
    with pytest.raises(LookupError):
        delete_run(engine, 1)
    engine.dispose()


@pytest.mark.parametrize("value", ["²", "١٢", "３", "1²"])
def test_url_run_ids_are_ascii_digits_only(value, capsys, tmp_path):
    with pytest.raises(links.LinkError):
        links.parse_run_id(value)
    ids, errors = links.parse_run_ids([value])
    assert ids == [] and errors
    rc, out = _cli(capsys, "export", value, "--out", str(tmp_path / "x.json"))
    assert rc == 2 and "not a run id" in out


def test_a_writer_cannot_store_an_unbounded_point(sqlite_engine):
    from db.store import add_measurement, start_run

    doc = fmt.validate(sample())
    rid = start_run(sqlite_engine, Environment.from_json(doc["environment"]),
                    Run.from_json({**doc["run"], "uuid": "w1"}))
    m = copy.deepcopy(doc["measurements"][0])
    m["details"] = {"x": "\x00"}
    with pytest.raises(fmt.BundleError, match="U\\+0000"):
        add_measurement(sqlite_engine, rid, Measurement.from_json(m))


def test_a_run_that_cannot_be_drawn_says_so_in_its_place(app_db_url, monkeypatch):
    from pages.charts import split_charts
    from pages.logic import run_text

    engine = make_engine(app_db_url)
    rid = import_bundle(engine, sample())[0]
    engine.dispose()

    def broken(*_a, **_k):
        raise ValueError("cannot draw this")

    monkeypatch.setattr(run_text, "headline", broken)
    monkeypatch.setattr(split_charts, "time_split_frame", broken)
    at = open_app("pages/run.py", run=str(rid))
    errors = [str(e.value) for e in at.error]
    assert any("The headline cannot be drawn" in e for e in errors), errors
    assert any("The charts cannot be drawn" in e for e in errors), errors
    from pages.logic.links import RUN_VIEWS

    assert [t.label for t in at.tabs] == list(RUN_VIEWS)  # the rest still shows


def test_serve_run_without_eager_time_leaves_the_serve_page_standing(app_db_url):
    doc = json.loads((ROOT / "data" / "samples" / "h200-serve-mlp.json").read_text())
    for p in doc["serve"]["profile"]:
        p["eager_ms"] = None
    for r in doc["serve"]["results"]:
        if r["kind"] == "eager":
            r["status"] = "error"
    engine = make_engine(app_db_url)
    import_bundle(engine, doc)
    engine.dispose()
    open_app("pages/serve.py")  # the default page shows the newest serve run


def test_delete_button_on_the_run_page(app_db_url, monkeypatch):
    engine = make_engine(app_db_url)
    rid = import_bundle(engine, sample())[0]
    at = open_app("pages/run.py", run=str(rid))
    at.button(key="delete_run").click().run()
    assert not at.exception
    assert any(f"Deleted run {rid}" in str(s.value) for s in at.success)
    assert snapshot(engine)["runs"][0] == 0
    rid = import_bundle(engine, sample())[0]
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    at = open_app("pages/run.py", run=str(rid))
    assert not [b for b in at.button if b.key == "delete_run"]
    engine.dispose()
