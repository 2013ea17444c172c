"""CSV exports cannot be turned into formulas (issue 29, item 2): a cell a spreadsheet
would run (OWASP: starts with =, +, -, @, tab or CR) is prefixed with ', numbers stay
numbers."""

from __future__ import annotations

import csv
import io

import pytest

from db import queries
from db.store import import_bundle
from pages.logic import points_table
from tests.conftest import ROOT
from tests.synthetic import sweep_bundle

FORMULAS = ['=HYPERLINK("http://evil.example","x")', "+1+cmd|' /C calc'!A0", "-2+3",
            "@SUM(1+1)", "\tTAB", "\rCR"]


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_points_csv_neutralises_every_formula_and_keeps_numbers(sqlite_engine):
    failing = {("compile", b): f for b, f in zip((1, 8, 64, 512, 4096), FORMULAS,
                                                  strict=False)}
    doc = sweep_bundle(failing=failing, uuid="formula-1")
    doc["measurements"][-1]["message"] = FORMULAS[-1]  # an ok point's message too
    rid = import_bundle(sqlite_engine, doc)[0]
    rows = _rows(points_table.points_csv(rid, queries.run_points(sqlite_engine, rid)))
    cells = [v for r in rows for v in r.values() if v]
    # No cell a spreadsheet would evaluate, except numbers (a negative number is one).
    starts = [v for v in cells if v[0] in "=+-@\t\r" and not _is_number(v)]
    assert starts == [], starts
    messages = {r["message"] for r in rows}
    assert {"'" + f for f in FORMULAS} <= messages  # kept, as text
    assert all(_is_number(r["step_ms"]) for r in rows if r["status"] == "ok")


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("value, shown", [("=1+1", "'=1+1"), ("-x", "'-x"), ("ok", "ok"),
                                          (-1.5, -1.5), (None, None), ("", "")])
def test_csv_cell(value, shown):
    assert points_table.csv_cell(value) == shown


def test_tables_offer_no_csv_of_their_own():
    """st.dataframe's own CSV button writes cells as they are (no formula guard in
    streamlit's exporter): the app's config turns it off, leaving the neutralised one."""
    text = (ROOT / ".streamlit" / "config.toml").read_text()
    client = text.split("[client]", 1)[1].split("\n[", 1)[0]  # tomllib is 3.11+
    assert "\ndisableDataExport = true" in client


# Issue 48, item 7: what a spreadsheet skips or folds before it reads a formula.
DISGUISED = [" =1+1", "\n=1+1", "\u200b=1+1", "\u2060=1+1", "\ufeff=1+1", "\u3000=1+1",
             "\uff1d1+1", "\uff0b1+1", "\uff0d1+1", "\uff201+1", " \u200b\uff1d1+1",
             "\r\n=1+1", "\u00a0@SUM(A1)"]


@pytest.mark.parametrize("value", DISGUISED, ids=ascii)
def test_a_formula_behind_whitespace_zero_width_or_full_width_signs_is_neutralised(value):
    assert points_table.csv_cell(value) == "'" + value


@pytest.mark.parametrize("value", ["a =1", "1 + 1", "x\u200b=1", "\uff21", " ok", "\u200b"],
                         ids=ascii)
def test_text_that_only_holds_a_sign_later_stays_as_it_is(value):
    assert points_table.csv_cell(value) == value


def test_the_points_csv_neutralises_disguised_formulas(sqlite_engine):
    failing = {("compile", b): f for b, f in zip((1, 8, 64, 512, 4096), DISGUISED,
                                                  strict=False)}
    rid = import_bundle(sqlite_engine, sweep_bundle(failing=failing, uuid="formula-2"))[0]
    rows = _rows(points_table.points_csv(rid, queries.run_points(sqlite_engine, rid)))
    messages = {r["message"] for r in rows if r["status"] == "error"}
    assert messages == {"'" + f for f in DISGUISED[:5]}
