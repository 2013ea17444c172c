"""Charts with room, read from what chromium draws (issue 25): at 1280x800 every chart on
Run (the H200 `mlp` sample), Compare (H200 vs L40S vs V100), Trend and Serve has a plot
area at least MIN_PLOT_PX tall and as wide as its column, and no axis title, legend label
or chart title runs past its svg or is shortened with an ellipsis.

Read from the SVG Vega draws: a plot is a mark group with axes among its marks, its size
that of its `path.background`; a text is cut when its box leaves its svg's box. Labels that
Vega hides to avoid overlap (opacity 0) are not drawn, so they are not counted.

The step timeline is a Gantt of lanes (two lanes of one mode per panel, its width fixed so
that modes share a time scale; pages/logic/timeline.py): its panels are held to
MIN_LANE_PAIR_PX and to no cut text, not to the plot rule.
"""

from __future__ import annotations

import pytest

from tests.conftest import H100_MLP_UUID, H200_MLP_UUID
from tests.e2e_support import SETTLED

pytestmark = pytest.mark.e2e

MIN_PLOT_PX = 150
MIN_LANE_PAIR_PX = 60
VIEWPORT = {"width": 1280, "height": 800}  # conftest's page takes it

# Every chart of the page, as Vega drew it. Plot groups: a group whose own marks include
# an axis. Lanes of the timeline: plots with a "GPU kernels" axis label.
MEASURE = """() => {
  const hidden = el => {
    for (let e = el; e && e.tagName !== 'svg'; e = e.parentElement) {
      const o = e.getAttribute('opacity');
      if (o !== null && parseFloat(o) === 0) return true;
    }
    return false;
  };
  return [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].map(el => {
    const svg = el.querySelector('svg.marks');
    const box = svg.getBoundingClientRect();
    const column = el.parentElement.getBoundingClientRect();
    const plots = [...svg.querySelectorAll('g.mark-group')].filter(g =>
        g.querySelector(':scope > g > g > g.role-axis, :scope > g > g.role-axis')).map(g => {
      const r = g.querySelector(':scope > g > path.background').getBoundingClientRect();
      const lane = [...g.querySelectorAll('g.role-axis text')].some(
          t => t.textContent === 'GPU kernels');
      return {width: r.width, height: r.height, lane};
    });
    const cut = [...svg.querySelectorAll('text')]
      .filter(t => t.textContent.trim() && !hidden(t))
      .filter(t => {
        const r = t.getBoundingClientRect();
        return r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
               r.bottom > box.bottom + 1 || t.textContent.includes('\u2026');
      }).map(t => t.textContent);
    const fills = [...svg.querySelectorAll('g.role-legend-symbol path')].map(
        p => p.getAttribute('fill'));
    return {svg_width: box.width, column_width: column.width, plots, cut, fills,
            title: [...svg.querySelectorAll('g.role-title-text text')].map(
                t => t.textContent).join(' ')};
  });
}"""



@pytest.fixture(scope="module")
def sample_ids(db) -> dict[str, int]:
    from db import queries

    runs = queries.runs_frame(db)
    sweeps = runs[runs["kind"] == "sweep"]

    def one(gpu: str, workload: str | None = None) -> int:
        rows = sweeps[sweeps["gpu_name"].fillna("").str.contains(gpu)]
        if workload:
            rows = rows[rows["workload"] == workload]
        return int(rows["id"].iloc[0])

    def by_uuid(uuid: str) -> int:  # an H200 mlp sample of its own: several ship
        return int(runs.loc[runs["uuid"] == uuid, "id"].iloc[0])

    return {"h200": by_uuid(H200_MLP_UUID), "h100": by_uuid(H100_MLP_UUID),
            "l40s": one("L40S"),
            "v100": one("V100"),
            "serve": int(runs.loc[runs["kind"] == "serve", "id"].iloc[0])}


def _charts(page, url: str) -> list[dict]:
    page.goto(url)
    page.wait_for_function(SETTLED)
    return page.evaluate(MEASURE)


def _problems(charts: list[dict]) -> list[str]:
    out = []
    for i, c in enumerate(charts):
        name = f"chart {i + 1} ({c['title'][:60] or 'untitled'})"
        if not c["plots"]:
            out.append(f"{name}: no plot found")
        for p in c["plots"]:
            least = MIN_LANE_PAIR_PX if p["lane"] else MIN_PLOT_PX
            if p["height"] < least:
                out.append(f"{name}: plot {p['height']:.0f} px tall (< {least})")
        lanes = all(p["lane"] for p in c["plots"])
        if not lanes and c["svg_width"] < c["column_width"] - 2:
            out.append(f"{name}: {c['svg_width']:.0f} px wide in a "
                       f"{c['column_width']:.0f} px column")
        if c["cut"]:
            out.append(f"{name}: cut at the edge or shortened: {c['cut'][:5]}")
    return out


def test_run_page_charts_have_room(dashboard, page, sample_ids):
    """Every chart view of the Run page (a tab each, ?view=), and the timeline."""
    from urllib.parse import quote

    from pages.logic.links import RUN_VIEWS

    base = dashboard.url(f"run?run={sample_ids['h200']}")
    # Energy draws only with energy figures, which no shipped sample has (its charts'
    # room: tests/pages/test_energy_pages.py builds them; the view here says why in one line).
    with_charts = [v for v in RUN_VIEWS if v != "Energy"][:4]
    views = {v: _charts(page, f"{base}&view={quote(v)}") for v in with_charts}
    # speedup and step time; what each mode keeps (the H200 sample predates the isolated
    # memory pass, so its cost and the speed-memory trade-off are unknown: one chart); the
    # time split's eight (each mode's split, eager against the launch cost, busy fraction,
    # launches, launch vs busy); lanes
    assert [len(c) for c in views.values()] == [2, 1, 8, 1]
    assert [p for c in views.values() for p in _problems(c)] == []
    # The speedup chart's legend lists the graph modes only: eager is the 1x line.
    assert len(views["Speed"][0]["fills"]) == 3


def test_memory_view_of_a_measured_memory_cost_has_room(dashboard, page, sample_ids):
    """The H100 sample has the isolated memory pass: what each mode keeps, and the speed
    against memory cost trade-off, both with room."""
    charts = _charts(page, dashboard.url(f"run?run={sample_ids['h100']}&view=Memory"))
    assert len(charts) == 2
    assert _problems(charts) == []


def test_compare_of_three_gpus_is_one_chart_with_room(dashboard, page, sample_ids):
    ids = sample_ids
    charts = _charts(page, dashboard.url(
        f"compare?run={ids['h200']}&run={ids['l40s']}&run={ids['v100']}"))
    assert _problems(charts) == []
    speedup = [c for c in charts if "per run and mode" in c["title"]]
    assert len(speedup) == 1
    # Every data plot of the three-GPU page is held to MIN_PLOT_PX; the one 68 px plot
    # issue 37 saw is the step timeline's lane pair (a Gantt, held to MIN_LANE_PAIR_PX).
    plots = [p for c in charts for p in c["plots"]]
    assert [p for p in plots if not p["lane"] and p["height"] < MIN_PLOT_PX] == []
    assert all(p["height"] >= MIN_LANE_PAIR_PX for p in plots if p["lane"])
    # What belongs to the GPU and to the host, and what else differs, said on the page.
    text = page.inner_text("[data-testid='stMain']")
    assert "What belongs to the GPU, what to the host" in text
    assert "these runs also differ in host" in text and "torch version" in text
    # One banner per distinct reason, not one per field and run.
    assert page.locator("[data-testid='stAlert']").count() <= 3


def test_trend_page_opens_on_charts_with_room(dashboard, page):
    charts = _charts(page, dashboard.url("trend"))
    assert charts, "the default selection draws nothing"
    assert _problems(charts) == []


def test_trend_change_points_have_room_and_a_compare_column(dashboard, db, page):
    """A series that stepped (issue 40): the step charts with their change points have
    room, and the change-point table is drawn with its Compare column. (The grid paints
    its cells on a canvas: that the column fits 1280 px was checked on a screenshot.)"""
    from db.store import import_bundle
    from tests.synthetic import sweep_bundle

    ids = [import_bundle(db, sweep_bundle(gpu="Stepped GPU", torch=t, scale=s,
                                          created_at=f"2026-0{i + 1}-01T00:00:00+00:00"))[0]
           for i, (t, s) in enumerate((("2.4.0", 1.0), ("2.5.1", 1.0), ("2.6.0", 1.0),
                                       ("2.7.0", 1.3)))]
    charts = _charts(page, dashboard.url("trend?workload=mlp&gpu=Stepped+GPU&batch=8"))
    steps = [c for c in charts if c["title"].startswith("Step time at batch 8")]
    assert len(steps) == 1 and _problems(charts) == []
    # The grid fills its (hidden) accessible copy a moment after it is drawn.
    table = page.locator("[data-testid='stDataFrame']").filter(has_text="between runs")
    table.locator("th[role='columnheader']").first.wait_for(state="attached")
    headers = [h.text_content() for h in table.locator("th[role='columnheader']").all()]
    assert headers[-1] == "compare"
    # The table's cells ride in its accessible copy: the two runs around the step.
    text = table.text_content()
    assert f"#{ids[2]} → #{ids[3]} (torch 2.6.0 → 2.7.0)" in text


def test_serve_page_charts_have_room_and_strategies_have_their_own_colour(
        dashboard, page, sample_ids):
    page.goto(dashboard.url(f"serve?run={sample_ids['serve']}"))
    # SETTLED can come before every one of the page's four charts has drawn (seen once in
    # a full run on two cores): wait for the four titles, then measure.
    page.wait_for_function("() => document.querySelectorAll('g.role-title-text').length >= 4")
    page.wait_for_function(SETTLED)
    charts = page.evaluate(MEASURE)
    assert _problems(charts) == []
    throughput = [c for c in charts if c["title"].startswith("Memory against throughput")][0]
    fills = throughput["fills"]
    assert len(fills) >= 4 and len(set(fills)) == len(fills)
    assert not {"black", "#000", "#000000"} & {f.lower() for f in fills if f}


def test_graph_memory_run_page_charts_have_room(dashboard, db, page):
    """A graph-memory run's two curves (built from the H200 probe's own rows)."""
    from db.store import import_bundle
    from tests.graph_memory_data import probe_bundle

    run_id = import_bundle(db, probe_bundle())[0]
    charts = _charts(page, dashboard.url(f"run?run={run_id}"))
    assert len(charts) == 2 and _problems(charts) == []
