"""The Runs board at 1280 px (issue 46): no "None" in the key-figure columns or the
parameters, every text column as wide as its widest cell, the first screen ending at a
column's edge, and runs that measure different things offered knowingly."""

from __future__ import annotations

from db import queries
from pages.logic import board
from pages.logic.text_width import fit_px
from tests.apptest import texts


def test_parameters_leave_out_what_the_run_did_not_record():
    assert board.known_params({"heads": None, "layers": 4, "model": "small-llama"}) == \
        {"layers": 4, "model": "small-llama"}
    assert board.known_params(None) is None


def test_each_column_set_fits_the_grid_and_no_cell_is_cut(dash):
    """Every set of the board's columns on the shipped samples lies within the grid at
    1280 px (the selection boxes beside it), each column as wide as its header and its
    widest cell; every column of the board is in a set or in the selected runs' details."""
    at = dash.open()
    table = at.dataframe[0].value
    for name, columns in board.COLUMN_SETS.items():
        w = board.set_widths(table, name)
        assert sum(w.values()) + board.SELECT_PX <= board.GRID_PX, name
        labels = board.column_labels(columns)
        for c in columns:
            cells = table["id"] if c == "link" else table[c].dropna()
            texts = [board.key_format(c) % v for v in cells] if c in board.key_columns() \
                else list(cells)
            assert w[c] >= fit_px([labels.get(c, c), *texts]), (name, c)
    shown = {c for cs in board.COLUMN_SETS.values() for c in cs} | set(board.DETAIL_COLUMNS)
    assert set(table.columns) <= shown | {"id"}
    detail = board.detail_table(table, list(table["id"][:2]))
    assert list(detail.columns) == board.DETAIL_COLUMNS and len(detail) == 2


def test_a_column_set_is_picked_and_the_selected_runs_read_whole(dash):
    a = dash.add(gpu="Synthetic GPU A", label="a label of my own")
    at = dash.open("pages/runs.py", columns=board.MODES_SET)
    assert at.radio[0].value == board.MODES_SET
    ids = list(at.dataframe[0].value["id"])
    at.session_state["runs_table"] = {"selection": {"rows": [ids.index(a)], "columns": []}}
    at.run()
    detail = at.table[0].value
    assert detail["label"].tolist() == ["a label of my own"]
    assert detail["memory cost"].iloc[0].endswith(" MiB memory cost over eager")


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
