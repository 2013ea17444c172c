"""One run, one set of figures, as chromium shows them (issue 37, issue 44): the shipped
`mlp` samples opened on the Run page's headline, the Runs board, Compare, Trends and their
HTML report must read the same best speedup and the same memory cost; and the Run page's
header leaves the first chart on the first screen at 1280x800. The H200 sample predates
the isolated memory pass (its graph pool is shown as a part, marked); the H100 sample has
the memory cost over eager with its parts.

tests/pages/test_run_summary.py reads the same through AppTest; this reads what a browser
draws (table cells come from the data grid's accessible cells)."""

from __future__ import annotations

import pytest

from contract.memory import OLD_METHOD
from contract.run_summary import MEMORY_COST_LABEL
from db import queries
from tests.conftest import H100_MLP_UUID, H200_MLP_UUID
from tests.e2e_support import download_report, wait_for_app

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1280, "height": 800}
# The samples' own figures (data/samples/h200-mlp.json, h100-mlp.json), as the run
# summary quotes them.
SAMPLES = {
    "h200": (H200_MLP_UUID, "NVIDIA+H200", "reduce-overhead at batch 1: 6.80x (6.05-7.57x)",
             f"graph pool 34.0 MiB ({OLD_METHOD})"),
    "h100": (H100_MLP_UUID, "NVIDIA+H100+80GB+HBM3", "cuda-graph at batch 8: 7.15x (4.71-9.59x)",
             f"+38.0 MiB {MEMORY_COST_LABEL}"),
}
HEADER_PX = 260  # from the title's top to the views' tabs: an answer of two lines fits

# The cells of the grids and of the static tables (Compare's and Trends' key figures).
CELLS = """() => [...document.querySelectorAll(
  "[data-testid='stTable'] td, [data-testid='stDataFrame'] table td, " +
  "[data-testid='stDataFrame'] [role='gridcell']")]
  .map(e => e.textContent.trim())"""


def _ids(db, uuid: str) -> tuple[int, int]:
    runs = queries.runs_frame(db)
    return (int(runs.query(f"uuid == '{uuid}'")["id"].iloc[0]),
            int(runs.query("uuid == 'published-l40s-day25'")["id"].iloc[0]))


def _row_of(page, first: str) -> list[str]:
    """The grid's cells from the cell that reads `first` (a run's unique name) on."""
    cells = page.evaluate(CELLS)
    start = cells.index(first)
    return cells[start:start + 3]


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_an_mlp_sample_reads_the_same_on_every_page(dashboard, db, page, tmp_path, sample):
    uuid, gpu, SPEEDUP, MEMORY = SAMPLES[sample]  # noqa: N806 (the figures, as above)
    rid, l40s = _ids(db, uuid)
    assert (queries.run_summary(db, rid).speedup_text(),
            queries.run_summary(db, rid).memory_text()) == (SPEEDUP, MEMORY)

    # The Run page's headline, and its header within HEADER_PX of the title.
    page.goto(dashboard.url(f"run?run={rid}"))
    wait_for_app(page, "Every finding")
    headline = page.locator("[data-testid='stMarkdownContainer'] h5").first.inner_text()
    # (the H100 sample's headline goes on with its energy gain)
    assert headline.strip().startswith(f"{SPEEDUP} · {MEMORY}"), headline
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    top = page.evaluate("""() => {
      const y = s => document.querySelector(s).getBoundingClientRect().top;
      return {title: y('h1'), tabs: y("[data-testid='stTabs']"),
              chart: y("[data-testid='stVegaLiteChart']")};
    }""")
    assert top["tabs"] - top["title"] <= HEADER_PX, top
    assert top["chart"] < VIEWPORT["height"] / 2, top  # the first chart well above the fold

    # The Runs board: the run's row (filtered from the URL: the grid's accessible copy
    # holds only the rows on screen).
    page.goto(dashboard.url(f"?gpu={gpu}&workload=mlp"))
    wait_for_app(page, "Runs")
    page.wait_for_function(f"() => ({CELLS})().length > 0")
    cells = page.evaluate(CELLS)
    # The row from its id, a link to the run (the board's Key figures set: id, GPU,
    # workload, key figure); the memory cost's sentence is in the selected runs' details
    # under the board (tests/pages/test_runs_board.py selects a row).
    at = cells.index(f"run?run={rid}")
    row = cells[at:at + 4]
    assert row[1:] == [gpu.replace("+", " "), "mlp", SPEEDUP], row

    # Compare, beside the published L40S run: the key figures' table (a static one).
    page.goto(dashboard.url(f"compare?run={rid}&run={l40s}"))
    wait_for_app(page, "Compare runs")
    page.wait_for_function(f"() => ({CELLS})().some(t => t.startsWith('#{rid} '))")
    cells = page.evaluate(CELLS)
    name = next(c for c in cells if c.startswith(f"#{rid} "))
    row = _row_of(page, name)
    assert row[1:3] == [SPEEDUP, MEMORY], row

    # Trends: the series of mlp runs on that GPU.
    page.goto(dashboard.url(f"trend?workload=mlp&gpu={gpu}"))
    wait_for_app(page, "Trends")
    page.wait_for_function(f"() => ({CELLS})().some(t => t.endsWith('#{rid}'))")
    cells = page.evaluate(CELLS)
    name = next(c for c in cells if c.endswith(f"#{rid}"))
    row = _row_of(page, name)
    assert row[1:3] == [SPEEDUP, MEMORY], row

    # Its HTML report, downloaded from the Import/export page and opened in the browser.
    path = download_report(page, dashboard.url(f"import?run={rid}"), tmp_path / "report.html")
    page.goto(path.as_uri())
    answer = page.locator("p.answer").first.inner_text()
    assert answer.strip().startswith(f"{SPEEDUP} · {MEMORY}"), answer
