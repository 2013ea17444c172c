"""The Runs board at 1280 px (issue 46): no "None" in the key-figure columns or the
parameters, every text column as wide as its widest cell, the first screen ending at a
column's edge, and runs that measure different things offered knowingly."""

from __future__ import annotations

import pandas as pd

from db import queries
from pages.logic import board
from tests.apptest import texts


def test_key_figure_headers_are_not_cut():
    for c in board.key_columns():
        assert board.key_width(c) > board.text_px(c) + board.CELL_PAD_PX, c


def test_parameters_leave_out_what_the_run_did_not_record():
    assert board.known_params({"heads": None, "layers": 4, "model": "small-llama"}) == \
        {"layers": 4, "model": "small-llama"}
    assert board.known_params(None) is None


def test_every_column_fits_its_widest_cell_and_the_first_screen_ends_at_an_edge():
    table = pd.DataFrame({"id": [1], "link": ["run?run=1"], "GPU": ["NVIDIA H100 80GB HBM3"],
                          "workload": ["transformer-decode"], "key figure": ["x" * 10],
                          "torch": ["2.11.0+cu130"],
                          "noise": ["5 of 16 points noisy, 16 of 16 points host unstable"],
                          "label": ["repeatability bench (transformer-decode, one)"]})
    w = board.board_widths(table)
    first = sum(w[c] for c in ("id", "link", "GPU", "workload", "key figure"))
    assert first + board.SELECT_PX == board.GRID_PX
    for c in ("GPU", "workload", "torch", "noise", "label"):
        assert w[c] > board.text_px(table[c][0]) + board.CELL_PAD_PX, c


def test_runs_that_differ_are_offered_knowingly(dash):
    runs = queries.runs_frame(dash.engine)
    sweeps = runs[(runs["kind"] == "sweep") & (runs["source"] == "measured")]
    picked = [int(sweeps[sweeps["workload"] == w]["id"].iloc[0])
              for w in ("kernel-chain", "transformer-decode")]
    at = dash.open()
    table = at.dataframe[0].value
    ids = list(table["id"])
    assert not table["parameters"].str.contains("None").any()
    # an unknown key figure (a CPU run has no graph mode) shows a dash, not "None"
    assert at.dataframe[0].proto.placeholder == board.NO_FIGURE
    at.session_state["runs_table"] = {"selection": {"rows": [ids.index(i) for i in picked],
                                                    "columns": []}}
    at.run()
    [label] = [p.label for p in at.get("page_link")]
    assert label == (f"Compare runs {picked[0]}, {picked[1]} anyway (workloads, "
                     "workload parameters, dtypes differ)")
    assert any(w.startswith("Not comparable: workloads differ") for w in texts(at, "warning"))
