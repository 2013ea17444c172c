"""The HTML reports at 1280 px in Debian's chromium (issue 46): the points tables read
(no word broken letter by letter, none wider than the page), and no dead link to the
dashboard they were made from. Built from the shipped samples, opened as files."""

from __future__ import annotations

import re

import pytest

from db import queries
from db.engine import make_engine
from db.graph_memory import graph_memory_doc
from db.samples import seed_if_empty
from pages.charts import report

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1280, "height": 800}
SHARE = "http://127.0.0.1:8611/run?run=7"

# Every points-table cell whose longest word is wider than the cell's content box: that
# word was broken into pieces ("Spe edu p over eag er") or overflows its cell. Each word
# is measured unbroken, in the cell's own font, by a probe put inside the cell.
BROKEN_WORDS = r"""() => {
  const bad = [];
  for (const c of document.querySelectorAll('table.points th, table.points td')) {
    const cs = getComputedStyle(c);
    const room = c.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const probe = document.createElement('span');
    probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
    c.appendChild(probe);
    // A line may end at a space or after a hyphen ("reduce-" / "overhead"): no elsewhere.
    for (const word of c.textContent.split(/\s+|(?<=-)/).filter(w => w)) {
      probe.textContent = word;
      if (probe.getBoundingClientRect().width > room + 1) bad.push(word);
    }
    probe.remove();
  }
  return bad;
}"""
TOO_WIDE = """() => [...document.querySelectorAll('div.wide')]
  .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.previousElementSibling.textContent)"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports")
    engine = make_engine(f"sqlite:///{folder / 'lb.db'}")
    seed_if_empty(engine)
    out = {}
    for r in queries.list_runs(engine):
        h = r.header
        if h.kind == "graph-memory" and "graph" not in out:
            out["graph"] = report.graph_memory_report(h, graph_memory_doc(engine, h.id), SHARE)
        elif h.kind == "sweep" and h.source == "measured" and h.gpu_name and "H100" in \
                h.gpu_name and "sweep" not in out:  # the widest: every GPU column
            out["sweep"] = report.html_report(h, queries.run_points(engine, h.id), SHARE)
    engine.dispose()
    assert set(out) == {"graph", "sweep"}
    paths = {}
    for name, html in out.items():
        paths[name] = folder / f"{name}.html"
        paths[name].write_text(html, encoding="utf-8")
    return paths


@pytest.mark.parametrize("name", ["sweep", "graph"])
def test_the_report_tables_read_at_1280_px(reports, browser, name):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(reports[name].as_uri())
        assert page.evaluate(BROKEN_WORDS) == []
        assert page.locator("table.points").count() >= 2  # a subject a table
        assert page.evaluate(TOO_WIDE) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    finally:
        context.close()
    html = reports[name].read_text(encoding="utf-8")
    # The dashboard it came from is named, not linked: in an attached file it leads nowhere.
    assert not re.search(r"<a\s", html)
    assert f"Made from the launchbench dashboard at <code>{SHARE}</code>" in html
    assert "not a link to follow" in html and "Live view" not in html
