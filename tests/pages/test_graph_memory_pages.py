"""Graph-memory runs on the dashboard (issue 27): the Run page draws the two curve charts
and the tables, the Runs board gives a key figure, Compare refuses it, the Serve page
prices with a stored run, the Import/export page and the HTML report carry it. The run is
the H200 probe's own rows (tests/graph_memory_data.py)."""

from __future__ import annotations

import pytest

from db.store import import_bundle
from pages.charts import report
from pages.logic import capture_advice as ca
from tests.apptest import charts, texts
from tests.conftest import ROOT
from tests.graph_memory_data import probe_bundle

DATA = ROOT / "tests" / "data" / "capture"


@pytest.fixture
def stored(dash):
    return import_bundle(dash.engine, probe_bundle(label="probe rows"))[0]


def test_run_page_draws_both_curves_and_the_tables(dash, stored):
    at = dash.open("pages/run.py", run=str(stored))
    assert len(charts(at)) == 2 and not at.error
    assert "graph memory" in at.title[0].value
    tables = [d.value for d in at.dataframe]
    figures = next(t for t in tables if "Figure" in t.columns).set_index("Figure")
    assert figures.at["Fixed part per capture (workspaces)", "Value"] == 34.0
    captures = next(t for t in tables if "Added MiB" in t.columns)
    assert len(captures) == 20 and list(captures["Added MiB"][:2]) == [34.0, 0.0]
    serve = [p for p in at.get("page_link") if "Serve page" in p.label]
    assert serve and not at.exception


def test_runs_board_and_compare(dash, stored):
    at = dash.open()
    row = at.dataframe[0].value.set_index("id").loc[stored]
    assert row["key figure"] == ("34.0 MiB fixed per capture; 10 sizes in one pool: "
                                 "34.0 MiB")
    assert row["points"] == "10 sizes captured" and row["link"] == f"run?run={stored}"
    at = dash.open("pages/compare.py", run=[str(stored), str(dash.published)])
    assert any(f"run {stored} is a graph-memory run" in w for w in texts(at, "warning"))


def test_serve_section_prices_with_a_stored_run(dash, stored):
    at = dash.open("pages/serve.py", capture="True")
    box = at.selectbox(key="cap_curve_run")
    assert box.value is None and box.options[0].startswith("Built-in: H200")
    # Every stored graph-memory run is offered (the shipped H200 sample too), newest first;
    # a run without a label says nothing after its date.
    assert f"#{stored} mlp on NVIDIA H200, 2026-11-30 12:00 UTC, probe rows" in box.options
    assert not any(o.endswith("nan") for o in box.options)
    box.set_value(stored)
    at.text_area(key="cap_text").set_value((DATA / "vllm_cudagraph_metrics.log").read_text())
    at.run()
    assert not at.exception and not at.error
    notes = " ".join(c.value for c in at.caption)
    assert f"priced by run {stored} (NVIDIA H200, mlp)" in notes
    assert len(charts(at)) >= 2  # the run's two curves under the advice


def test_serve_section_opened_from_the_run_page_preselects_the_run(dash, stored):
    at = dash.open("pages/serve.py", curve=str(stored))
    assert at.selectbox(key="cap_curve_run").value == stored
    at = dash.open("pages/serve.py", curve="nope")  # a bad ?curve= falls back, silently
    assert at.selectbox(key="cap_curve_run").value is None and not at.exception


def test_import_export_page_and_the_html_report(dash, stored):
    at = dash.open("pages/import.py", run=str(stored))
    labels = [b.label for b in at.get("download_button")]
    assert "Captures (.csv)" in labels and "graph-memory-total.png" in labels
    from db import queries

    header = queries.run_header(dash.engine, stored)
    from db.graph_memory import graph_memory_doc

    html = report.graph_memory_report(header, graph_memory_doc(dash.engine, stored),
                                      "http://127.0.0.1:8501/run?run=1")
    assert "chart-graph-memory-total" in html and "chart-graph-memory-added" in html
    assert "<svg" in html and "<script" not in html and "Captures" in html
    assert "--curve" in html and "probe rows" in html


def test_curve_choices_and_frames():
    from contract import bundle as fmt
    from contract import graph_memory as gm

    doc = gm.doc_from_bundle(fmt.validate(probe_bundle()), "x")
    frame = ca.captures_frame(doc)
    assert list(frame["Pool"].unique()) == ["shared", "private"]
    assert ca.attribution_frame(doc).set_index("Figure").at[
        "One shared pool saves", "Value"] == 306.0


def test_an_uploaded_graph_memory_bundle_says_what_it_holds(dash):
    from contract import bundle as fmt
    from pages.widgets.data import import_uploads

    text = fmt.dumps(probe_bundle()).encode()
    (first,) = import_uploads(dash.engine, [("gm.json", text)])
    assert first.ok and "graph-memory, 20 captures of 10 sizes" in first.message
    (again,) = import_uploads(dash.engine, [("gm.json", text)])
    assert not again.ok and again.run_id == first.run_id
