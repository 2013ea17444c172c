"""The dashboard in a real browser: Debian's chromium through Playwright against a real
`streamlit run app.py` (one server for the module, a fresh browser context per test)."""

from __future__ import annotations

import pytest

from contract import bundle as fmt
from db import queries
from db.store import import_bundle
from tests.e2e_support import download_report, rendered_charts, wait_for_app
from tests.synthetic import sweep_bundle

pytestmark = pytest.mark.e2e


def _sample_run(db) -> int:
    """The run for the full-page check: a measured sample when one is shipped (more
    charts), else the published figures. Never synthetic test data."""
    runs = queries.runs_frame(db)
    runs = runs[runs["kind"] == "sweep"]  # a serve run has a page of its own
    measured = runs[runs["source"] == "measured"]
    return int((measured if len(measured) else runs).iloc[0]["id"])


def _expect_charts(page, at_least: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] canvas, "
        "[data-testid='stVegaLiteChart'] svg.marks\").length >= n", arg=at_least)


def test_run_share_link_shows_its_charts_in_a_fresh_browser(dashboard, db, page, tmp_path):
    rid = _sample_run(db)
    page.goto(dashboard.url(f"run?run={rid}"))
    wait_for_app(page, "Every finding")
    _expect_charts(page, 2)
    header = queries.run_header(db, rid)
    page.get_by_text(f"Run {rid}: {header.workload}").first.wait_for()
    # A tab a view: a click opens Environment, whose share link (in a copyable code
    # block) names this very run, and the address bar carries the view.
    page.get_by_role("tab", name="Environment").click()
    page.get_by_text("Share link:").first.click()  # its expander
    page.locator("[data-testid='stCode']").filter(
        has_text=dashboard.url(f"run?run={rid}")).first.wait_for()
    page.wait_for_function("() => location.search.includes('view=Environment')")
    # The first request of a fresh server went through the frame: the sidebar is there.
    page.get_by_text("Database:").first.wait_for()
    assert "Traceback" not in page.content()
    # Streamlit scrolls inside its main container, so grow the window to the whole page
    # before the screenshot (full_page alone would only capture the first screen).
    height = page.evaluate("document.querySelector(\"[data-testid='stMain']\").scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 8000)})
    page.wait_for_timeout(500)  # let Vega redraw at the new size
    shot = tmp_path / "run.png"  # docs/ pictures: bench/page_pictures.py
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_compare_link_overlays_runs(dashboard, db, page):
    published = int(queries.runs_frame(db).query("uuid == 'published-l40s-day25'")["id"].iloc[0])
    other, _ = import_bundle(db, sweep_bundle(gpu="Synthetic GPU (e2e)", batches=(8, 8192),
                                              params={"depth": 32, "width": 256}))
    page.goto(dashboard.url(f"compare?run={published}&run={other}"))
    wait_for_app(page, "Per batch size")
    _expect_charts(page, 1)
    assert page.get_by_text("Environment differences").count() == 1
    assert "Traceback" not in page.content()


def test_bad_run_link_shows_one_clear_line(dashboard, page):
    page.goto(dashboard.url("run?run=abc"))
    wait_for_app(page, "is not a run id")
    assert "Traceback" not in page.content()
    assert rendered_charts(page) == 0


def test_upload_a_bundle(dashboard, db, page, tmp_path):
    doc = sweep_bundle(label="SYNTHETIC upload (e2e)")
    path = fmt.write(tmp_path / "upload.json", doc)
    page.goto(dashboard.url("import"))
    wait_for_app(page, "Import bundles")
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(path))
    page.get_by_role("button", name="Import 1 file(s)").click()
    page.get_by_text("imported as run").first.wait_for()
    runs = queries.runs_frame(db)
    assert doc["run"]["uuid"] in set(runs["uuid"])
    # Its run page opens from the link the import shows.
    rid = int(runs.set_index("uuid").at[doc["run"]["uuid"], "id"])
    page.get_by_text(f"Open run {rid}").click()
    wait_for_app(page, "Every finding")
    _expect_charts(page, 2)  # the Speed view: speedup and step time


def test_html_report_downloads_and_opens_offline(dashboard, db, browser, page, tmp_path):
    rid = _sample_run(db)
    path = download_report(page, dashboard.url(f"import?run={rid}"), tmp_path / "report.html")
    # Open it with every network request refused: it must still show its charts.
    offline = browser.new_context(offline=True)
    try:
        view = offline.new_page()
        asked = []
        view.on("request", lambda r: asked.append(r.url))
        view.goto(path.as_uri())
        assert view.locator("div.chart svg").count() >= 2
        assert view.get_by_text(f"Run {rid}:").count() >= 1
        assert [u for u in asked if not u.startswith("file:")] == []
    finally:
        offline.close()


def test_a_graph_memory_run_link_draws_its_two_curves(dashboard, db, page):
    """A stored graph-memory run (the H200 probe's rows) in a fresh browser: both curve
    charts, and the link that prices capture lists with it on the Serve page."""
    from tests.graph_memory_data import probe_bundle

    rid = import_bundle(db, probe_bundle())[0]
    page.goto(dashboard.url(f"run?run={rid}"))
    wait_for_app(page, "graph memory")
    _expect_charts(page, 2)
    page.get_by_text("Price capture lists with this curve").first.click()
    page.wait_for_function(f"() => location.search.includes('curve={rid}')")
    # The curve picker (a combobox: its choice is the input's value, not text) shows it.
    page.wait_for_function(
        "v => [...document.querySelectorAll('input[role=combobox]')]"
        ".some(i => i.value.startsWith(v))", arg=f"#{rid} mlp on NVIDIA H200")
    assert "Traceback" not in page.content()
