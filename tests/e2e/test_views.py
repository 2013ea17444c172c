"""What a reader sees at 1280x720 in chromium: the answer columns on screen, no 'nan'
for a CPU run, no request leaving the machine (favicon included), a clear page for an
unknown path. The docs/ screenshots come from bench/page_pictures.py (samples only,
1280x800)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from contract.run_summary import MEMORY_COST_LABEL
from db import queries
from db.store import import_bundle
from tests.e2e_support import wait_for_app
from tests.synthetic import sweep_bundle

pytestmark = pytest.mark.e2e

SMALL = {"width": 1280, "height": 720}


def _visible_text(page) -> str:
    return page.evaluate("document.querySelector(\"[data-testid='stMain']\").innerText")


def test_run_page_answer_first_at_1280_and_nothing_fetched_from_outside(dashboard, db,
                                                                         page):
    hosts = set()
    page.on("request", lambda r: hosts.add(urlsplit(r.url).hostname))
    runs = queries.runs_frame(db)
    rid = int(runs[(runs["kind"] == "sweep") & (runs["source"] == "measured")
                   & runs["gpu_name"].notna()]["id"].iloc[0])  # a GPU sweep: it has a pool
    page.set_viewport_size(SMALL)
    page.goto(dashboard.url(f"run?run={rid}"))
    wait_for_app(page, "Every finding")
    text = _visible_text(page)
    summary = next(line for line in text.splitlines() if MEMORY_COST_LABEL in line)
    assert " at batch " in summary and " MiB " in summary
    # The answer first: the first chart starts on the first screen, under the headline.
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.wait_for()
    assert chart.bounding_box()["y"] < SMALL["height"] - 150
    page.goto(dashboard.url(f"run?run={rid}&view=Points"))
    wait_for_app(page, "Speedup at a glance")
    # The speedup pivot names the graph modes as its columns: each header cell lies
    # inside the 1280 px window, not scrolled off to the right.
    grid = page.locator("[data-testid='stDataFrame']").first
    box = grid.bounding_box()
    assert box is not None and box["x"] + box["width"] <= SMALL["width"] + 1
    # Nothing but this server: no font CDN for the favicon, no emoji CDN.
    assert hosts <= {"127.0.0.1", "localhost"}, hosts


def test_a_cpu_run_is_never_named_nan(dashboard, db, page):
    cpu, _ = import_bundle(db, sweep_bundle(device="cpu", params={"depth": 32,
                                                                  "width": 256}))
    page.set_viewport_size(SMALL)
    for path, wait in ((f"run?run={cpu}", "Every finding"),
                       (f"run?run={cpu}&view=Points", "Speedup at a glance"), ("", "Runs"),
                       (f"import?run={cpu}", "Export a run")):
        page.goto(dashboard.url(path))
        wait_for_app(page, wait)
        page.wait_for_timeout(500)
        text = _visible_text(page)
        assert "nan" not in text.replace("nanosec", ""), (path, text[:400])
    page.goto(dashboard.url(f"run?run={cpu}"))
    wait_for_app(page, "CPU (synthetic-host)")


def test_compare_at_1280(dashboard, db, page):
    published = int(queries.runs_frame(db).query("uuid == 'published-l40s-day25'")["id"].iloc[0])
    runs = queries.runs_frame(db)
    mlp = runs[(runs["kind"] == "sweep") & (runs["workload"] == "mlp")
               & (runs["source"] == "measured")]
    ids = [published, *map(int, mlp["id"].iloc[:1])]
    page.set_viewport_size(SMALL)
    page.goto(dashboard.url("compare?" + "&".join(f"run={i}" for i in ids)))
    wait_for_app(page, "Memory cost over eager, side by side")
    assert "not medians" in _visible_text(page)


def test_unknown_path_says_no_such_page_with_links(dashboard, page):
    page.goto(dashboard.url("nosuchpage"))
    wait_for_app(page, "There is no page /nosuchpage")
    page.locator("[data-testid='stPageLink']").nth(2).wait_for()  # Runs, Compare, ...


def test_trends_at_1280_and_a_bad_query_string(dashboard, db, page):
    up = {("cuda-graph", 8): {"speedup": 30.0, "speedup_ci_low": 29.0,
                              "speedup_ci_high": 31.0}}
    for i, torch in enumerate(("2.5.1", "2.6.0", "2.7.0")):
        import_bundle(db, sweep_bundle(gpu="Trend GPU", torch=torch,
                                       created_at=f"2026-0{i + 1}-01T00:00:00+00:00",
                                       overrides=up if i == 2 else None))
    page.set_viewport_size(SMALL)
    page.goto(dashboard.url("trend?batch=%EF%BC%98"))  # a full-width digit eight
    wait_for_app(page, "is not a batch size: expected a whole number in ASCII digits")
    assert "Traceback" not in _visible_text(page)
    page.goto(dashboard.url("trend?workload=mlp&gpu=Trend+GPU&batch=8&batch=512"))
    wait_for_app(page, "cuda-graph at batch 8: faster")
    wait_for_app(page, "Share link")
    assert "/trend?workload=mlp&gpu=Trend+GPU&params=" in page.url


def _open_traced_run(dashboard, db, page, label: str, query: str = "") -> int:
    """A synthetic run with step traces at batch 1, 8, 64, opened at 1280x720."""
    rid = import_bundle(db, sweep_bundle(batches=(1, 8, 64), modes=("eager", "cuda-graph"),
                                         traces=True, label=f"SYNTHETIC {label}"))[0]
    page.set_viewport_size(SMALL)
    page.goto(dashboard.url(f"run?run={rid}{query}"))
    return rid


def _wait_for_lanes(page) -> None:
    """Vega draws SVG here: the stacked lane pairs carry their titles and idle totals."""
    page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks "
        "text\")].filter(t => t.textContent.startsWith('GPU idle ')).length >= 2",
        timeout=60_000)


def test_a_share_link_with_batch_draws_the_step_timeline(dashboard, db, page):
    # A fresh context (a new visitor) opens /run?run=ID&batch=8 and Vega draws the lanes.
    _open_traced_run(dashboard, db, page, "timeline", "&batch=8")
    wait_for_app(page, "One step, launch by launch")
    _wait_for_lanes(page)
    # The link asked for the timeline: it opens the Timeline view, on the first screen.
    page.wait_for_function(
        "() => { const h = document.getElementById('timeline');"
        f" return h && h.getBoundingClientRect().top < {SMALL['height'] - 150}; }}",
        timeout=30_000)
    assert page.get_by_role("tab", name="Timeline", selected=True).count() == 1
    drawn = page.locator("[data-testid='stVegaLiteChart'] svg.marks", has_text="GPU idle")
    assert drawn.count() == 1
    svg = drawn.first
    box = svg.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 150  # two lane pairs
    assert box["x"] + box["width"] <= SMALL["width"] + 1  # fits the 1280 px window
    labels = svg.evaluate("s => [...s.querySelectorAll('text')].map(t => t.textContent)")
    assert "eager" in labels and "cuda-graph" in labels
    assert sum(t.startswith("GPU idle ") for t in labels) == 2
    assert svg.locator("path[aria-roledescription='bar'], .mark-rect path").count() > 100
    wait_for_app(page)
    assert "batch=8" in page.url  # the address bar, the view's share link, keeps it
    assert page.get_by_text("eager (.json)").count() == 1  # a Perfetto download per point
    assert "?batch='" not in _visible_text(page)


def test_a_click_on_a_speedup_point_opens_its_timeline(dashboard, db, page):
    _open_traced_run(dashboard, db, page, "click")
    wait_for_app(page, "Every finding")
    points = page.locator("[data-testid='stVegaLiteChart']").first.locator(
        "svg .mark-symbol path")
    points.first.wait_for()
    points.first.click(force=True)  # batch 1's cuda-graph point
    page.wait_for_function("() => location.search.includes('batch=1')", timeout=30_000)
    page.get_by_role("tab", name="Timeline", selected=True).wait_for()
    wait_for_app(page, "One step, launch by launch")
    _wait_for_lanes(page)  # batch 1's
