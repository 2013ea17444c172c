"""The Run page's views as a reader at 1280x800 found them on the shipped samples (issue
46): the published V100 run shows its per-kernel figures (a headline, a chart, no "torch
—"), the Points view draws its tables whole and uncut, the Environment view reads as words
and units, the Energy view says which points it leaves out."""

from __future__ import annotations

import json

from db import queries
from pages.logic import point_groups, points_table, run_text
from pages.logic.text_width import fit_px
from tests.apptest import charts, texts

V100 = "published-v100-cuda-graphs-blog"


def _run_id(dash, uuid: str) -> int:
    runs = queries.runs_frame(dash.engine)
    return int(runs.loc[runs["uuid"] == uuid, "id"].iloc[0])


def _everything(at) -> str:
    return " ".join([*(t.value for t in at.title), *texts(at, "markdown"),
                     *texts(at, "caption"), *texts(at, "info")])


def test_published_v100_run_shows_its_per_kernel_figures(dash):
    at = dash.open("pages/run.py", run=str(_run_id(dash, V100)))
    md = texts(at, "markdown")
    assert md[0] == ("##### Per kernel, as published (CPU wall-clock time per kernel), at "
                     "500,000 elements: eager 3.8 us; eager synced after each kernel 9.6 us; "
                     "cuda-graph 3.4 us")
    drawn = charts(at)
    assert len(drawn) == 1 and "Time per kernel" in json.dumps(drawn[0].spec)
    said = _everything(at)
    assert "every point failed" not in said and "No chart" not in said
    assert "torch not recorded" in said and "torch —" not in said
    memory = dash.open("pages/run.py", run=str(_run_id(dash, V100)), view="Memory")
    assert "no point of this run ended ok" not in _everything(memory)
    points = dash.open("pages/run.py", run=str(_run_id(dash, V100)), view="Points")
    assert any(t.startswith("No speedups:") for t in texts(points, "info"))
    per_kernel = points.dataframe[0].value  # the workload's own table: no "None" cells
    assert not per_kernel.isna().any().any()


def test_points_view_draws_every_row_in_tables_that_fit_the_page(dash):
    """The pivot wraps (every mode on screen at 1280 px); the points are one table a
    subject, each drawn whole, every column as wide as its text and the columns together
    no wider than the page's 820 px (an expander's 786); every figure of the points table
    is in one of them, under its own name or a short header whose tooltip names it."""
    at = dash.open("pages/run.py", run=str(_run_id(dash, "edde740d-b50e-4c82-bbac-4d39143e876a")),
                   view="Points")
    pivot = at.table[0].value
    assert list(pivot.columns) == ["compile", "reduce-overhead", "cuda-graph"]
    full = points_table.points_table(dash_points(dash, "edde740d-b50e-4c82-bbac-4d39143e876a"))
    seen: set[str] = set()
    for grid in at.dataframe:
        rows = grid.value
        assert len(rows) == 28 and list(rows.columns[:2]) == ["Mode", "Batch size"]
        config = json.loads(grid.proto.columns)
        widths = {c: config[c]["width"] for c in rows.columns}
        assert sum(widths.values()) <= point_groups.PAGE_PX
        for c in rows.columns:
            label = config[c].get("label", c)
            assert widths[c] >= fit_px([label, *rows[c].astype(str)]), c  # none cut
            assert label == c or config[c].get("help"), c  # a short header: a tooltip
        seen |= set(rows.columns)
    assert seen == set(full.columns) - {points_table.NOTE_COLUMN} or seen == set(full.columns)
    assert points_table.table_height(28) >= 29 * points_table.ROW_PX  # no scroll box


def dash_points(dash, uuid: str):
    return queries.run_points(dash.engine, _run_id(dash, uuid))


def test_environment_view_reads_in_words_and_units(dash):
    rid = _run_id(dash, "edde740d-b50e-4c82-bbac-4d39143e876a")  # the H200 sample
    at = dash.open("pages/run.py", run=str(rid), view="Environment")
    env = at.dataframe[0].value.set_index("field")["value"]
    assert env["GPU memory"].endswith(" GiB") and env["GPU memory"][0].isdigit()
    assert not {"None", "nan", "—"} & set(env)
    v100 = dash.open("pages/run.py", run=str(_run_id(dash, V100)), view="Environment")
    env = v100.dataframe[0].value.set_index("field")["value"]
    assert env["torch"] == run_text.NOT_RECORDED and env["CUDA"] == "10.1"


def test_energy_view_names_the_points_it_leaves_out_above_idle(dash):
    rid = _run_id(dash, "cd5aa023-bc3e-4cb5-9cb9-ef85cc505eb8")  # the H200 energy sample
    at = dash.open("pages/run.py", run=str(rid), view="Energy")
    assert len(charts(at)) == 2
    assert any("Not drawn above idle, within the counter's error: eager at batches"
               in c for c in texts(at, "caption"))
