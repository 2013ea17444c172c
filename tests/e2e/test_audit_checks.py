"""The page audit's checks fail on what they look for (tests/e2e/audit.py), so that a
clean audit (tests/e2e/test_audit.py, bench/page_audit.py) means clean pages. Plain data
as tests/e2e/audit_page.js reads it from chromium; no browser here, but for the test that
runs audit_page.js itself over planted grids.
"""

from __future__ import annotations

import pytest

from tests.e2e import audit


def _plot(label_box: dict, ticks: list[str]) -> dict:
    return {"box": {"left": 0, "right": 200, "top": 0, "bottom": 200, "width": 200,
                    "height": 200},
            "axes": [{"aria": "", "title": "Batch size", "labels": ticks}],
            "items": [{"kind": "mark-symbol", "text": "", "label": "b=8", "clipped": False,
                       "box": label_box}]}


def _snap(plot: dict, line: str, cell: str, width: float, need: float) -> dict:
    return {"lines": [line], "cut": [], "broken": [], "codes": [], "links": [],
            "widgets": [], "tabs": [],
            "grids": [{"columns": [{"title": "torch", "width": width, "right": 32 + width,
                                    "head": 10, "need": need, "widest": cell,
                                    "cells": [cell]}],
                       "rows": 1, "box_width": 500, "box_height": 80, "content_height": 70}],
            "charts": [{"svg": plot["box"], "title": "t", "subtitle": "", "texts": [],
                        "marks": [], "plots": [plot]}]}


CASE = audit.Case("planted", "run?run=1&view=Speed", (1,), view="Speed")
FACTS = audit.Facts({1: {1, 8}}, {1: {"eager"}})


def test_the_audit_sees_planted_faults():
    """A None, a cut column, a dot outside its plot, a tick at an unmeasured batch."""
    snap = _snap(_plot({"left": 220, "right": 226, "top": 10, "bottom": 16}, ["1", "4"]),
                 "heads=None", "2.11.0", 20, 80)
    checks = {f.check for f in audit.audit(CASE, snap, FACTS)}
    assert {"None shown", "cut cell", "mark outside its plot", "batch tick not measured",
            "measured batch unlabelled"} <= checks


def test_a_clean_page_has_no_fault():
    """The same page drawn right: a dot inside its plot, every measured batch labelled, a
    column wider than its text, 'None of' in prose."""
    snap = _snap(_plot({"left": 90, "right": 96, "top": 10, "bottom": 16}, ["1", "8"]),
                 "None of the points failed", "2.11.0", 90, 80)
    assert audit.audit(CASE, snap, FACTS) == []


def test_a_share_link_that_loses_state_is_a_fault():
    """A reopened link that drops the batch picked and draws other points."""
    first = {"widgets": ["Batch size 64"], "tabs": ["Timeline"], "marks": ["b: 64"],
             "link": "http://x/run?run=1&view=Timeline&batch=64", "url": ""}
    again = {"widgets": ["Batch size 1"], "tabs": ["Timeline"], "marks": ["b: 1"]}
    faults = audit.state_faults(CASE, first, again)
    assert [f.element for f in faults] == ["widgets", "marks"]
    assert audit.state_faults(CASE, first, dict(first)) == []


def test_an_error_bar_the_scale_cut_is_a_fault():
    """A rule that ends exactly on the plot's top edge (its interval ran past the axis);
    one that spans the plot (a 1x reference line) is not."""
    area = {"left": 0, "right": 100, "top": 0, "bottom": 200, "width": 100, "height": 200}

    def rule(box: dict) -> dict:
        return {"kind": "mark-rule", "text": "", "label": "run 3", "clipped": False,
                "box": box}

    cut = rule({"left": 50, "right": 50, "top": 0, "bottom": 40, "width": 0, "height": 40})
    line = rule({"left": 0, "right": 100, "top": 60, "bottom": 60, "width": 100, "height": 0})
    snap = {"charts": [{"title": "t", "subtitle": "", "texts": [], "marks": [], "svg": area,
                        "plots": [{"box": area, "axes": [], "items": [cut, line]}]}]}
    faults = audit.check_marks_in_plot(CASE, snap, FACTS)
    assert len(faults) == 1 and "1 top" in faults[0].text


# Two grids as streamlit's glide grid hangs them on its canvas (the React fiber): a cell
# of each is missing; one element has a placeholder (st.dataframe(placeholder="—")).
FAKE_GRIDS = """() => {
  for (const placeholder of ['\\u2014', undefined]) {
    const el = document.createElement('div');
    el.setAttribute('data-testid', 'stDataFrame');
    el.style.width = '300px';
    el.style.height = '80px';
    const canvas = document.createElement('canvas');
    el.appendChild(canvas);
    document.body.appendChild(el);
    const cells = [{displayData: '1.2'}, {displayData: '', isMissingValue: true}];
    const element = {arrowData: {}, ...(placeholder ? {placeholder} : {})};
    canvas['__reactFiber$x'] = {
      memoizedProps: {columns: [{title: 'gain', width: 100}], rows: 2, rowHeight: 35,
                      getCellContent: ([c, r]) => cells[r],
                      theme: {cellHorizontalPadding: 8, headerFontStyle: '600 13px',
                              baseFontStyle: '13px', fontFamily: 'sans-serif'}},
      return: {memoizedProps: {}, return: {memoizedProps: {element}, return: null}}};
  }
}"""


@pytest.mark.e2e  # reads the grids in chromium, as the audit does
def test_a_missing_cell_reads_as_the_grid_draws_it(browser):
    """A missing cell reads as its grid's placeholder (a dash: no fault), and as streamlit's
    grey 'None' in a grid without one (a fault)."""
    page = browser.new_page()
    try:
        page.set_content("<html><body></body></html>")
        page.evaluate(FAKE_GRIDS)
        snap = page.evaluate(audit.COLLECT_JS, {"root": "body", "charts": "svg.marks"})
    finally:
        page.close()
    assert [g["columns"][0]["cells"] for g in snap["grids"]] == [["1.2", "\u2014"],
                                                                 ["1.2", "None"]]
    faults = audit.check_raw_values(CASE, snap, FACTS)
    assert [(f.check, f.element) for f in faults] == [("None shown", "table column 'gain'")]


def test_a_deprecation_warning_in_the_server_log_is_a_fault():
    """streamlit's warning for a deprecated call, once however often it was logged; a
    plain log line is none."""
    warning = ("2026-12-06 12:00:00.000 WARNING streamlit.deprecation_util: Please replace "
               "`st.components.v1.html` with `st.iframe`.")
    log = "\n".join(["  You can now view your Streamlit app in your browser.", warning,
                     warning, "`st.components.v1.html` will be removed after 2026-06-01."])
    faults = audit.log_faults(log)
    assert [f.check for f in faults] == ["deprecation warning"] * 2
    assert audit.log_faults("  URL: http://127.0.0.1:8501") == []


def test_a_batch_axis_must_label_the_sizes_with_a_step_time():
    """A run's ok points with a step time are measured batch sizes its axes must label;
    ok points without one (a published time per kernel) are not."""
    import pandas as pd

    pts = pd.DataFrame({"run_id": [1, 1, 2, 2], "mode": ["eager", "cuda-graph"] * 2,
                        "batch_size": [8, 8, 500000, 500000], "status": ["ok"] * 4,
                        "step_ms": [1.0, 0.5, None, None]})
    facts = audit.points_facts(pts)
    assert facts.measured([1, 2]) == {8} and facts.modes[2] == {"eager", "cuda-graph"}
    snap = _snap(_plot({"left": 90, "right": 96, "top": 10, "bottom": 16}, ["1"]), "", "", 90, 8)
    faults = audit.check_batch_axis(audit.Case("c", "compare", (1, 2)), snap, facts)
    assert [f.text for f in faults if f.check == "measured batch unlabelled"] == [
        "no tick at [8]; ticks [1]"]


def test_a_squeezed_plot_is_a_fault():
    """A plot fit-x squeezed to a sliver (a subtitle wider than its chart) is named; one
    of a half-page chart is not."""
    def snap(width: float) -> dict:
        area = {"left": 0, "right": width, "top": 0, "bottom": 220, "width": width,
                "height": 220}
        return {"charts": [{"title": "Step time at batch 1", "subtitle": "", "texts": [],
                            "marks": [], "svg": area,
                            "plots": [{"box": area, "axes": [], "items": []}]}]}

    faults = audit.check_plot_size(CASE, snap(14), FACTS)
    assert [(f.check, f.text) for f in faults] == [("plot too narrow",
                                                    "plot 14 px wide (< 150)")]
    assert audit.check_plot_size(CASE, snap(320), FACTS) == []
